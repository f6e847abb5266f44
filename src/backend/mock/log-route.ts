import type { FastifyInstance, FastifyRequest } from "fastify";
import { QUERY } from "../../core/backend-contract/index.ts";
import { type BackendEngine, badRequest, notFound, parseLeaseUuid } from "../kit/index.ts";
import { hangMatching } from "./hang-inventory.ts";
import type { MockSubstrate } from "./substrate.ts";

/**
 * `POST /_mock/log/{lease_uuid}` (signed like every contract route): the lease's instances
 * write lines now, for tests of the streaming log read. Body: `{"line": text}` plus
 * optional `"stream"` ("stdout", the default, or "stderr"), `"service"` and `"instance"`
 * (default: every instance), and `"count"` (1 to 10,000: the line that many times, with
 * ` #n` appended; a flood). 400 on a bad body, 404 when the lease has no workload here.
 */
export const LOG_PATH = "/_mock/log/:uuid";
const MAX_COUNT = 10_000;

interface LogBody {
  line?: unknown;
  stream?: unknown;
  service?: unknown;
  instance?: unknown;
  count?: unknown;
}

function body(req: FastifyRequest): LogBody {
  try {
    const parsed = JSON.parse(String(req.body ?? "")) as unknown;
    if (typeof parsed === "object" && parsed !== null) return parsed as LogBody;
  } catch {}
  throw badRequest("body must be a JSON object");
}

export function registerLogRoute(substrate: MockSubstrate, hangFollow: boolean) {
  return (app: FastifyInstance, engine: BackendEngine): void => {
    // MOCK_BACKEND_HANG_LOG_FOLLOW: a streaming log read is accepted and never answered.
    if (hangFollow)
      hangMatching(
        app,
        (req) =>
          req.method === "GET" &&
          req.url.startsWith("/logs/") &&
          (req.query as Record<string, unknown>)[QUERY.follow] === "true",
      );
    app.post(LOG_PATH, async (req: FastifyRequest) => {
      let uuid: string;
      try {
        uuid = parseLeaseUuid((req.params as { uuid: string }).uuid);
      } catch (err) {
        throw badRequest((err as Error).message);
      }
      const b = body(req);
      if (typeof b.line !== "string") throw badRequest("line must be a string");
      const stream = b.stream ?? "stdout";
      if (stream !== "stdout" && stream !== "stderr") throw badRequest("stream must be stdout or stderr");
      const count = b.count ?? 1;
      if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > MAX_COUNT)
        throw badRequest(`count must be an integer from 1 to ${MAX_COUNT}`);
      if (engine.journal.getLease(uuid) === undefined) throw notFound();
      const instances = (substrate.instancesOf(uuid) ?? []).filter(
        (i) =>
          (b.service === undefined || i.service === b.service) &&
          (b.instance === undefined || i.index === b.instance),
      );
      if (instances.length === 0) throw notFound("no such instance");
      const lines = [];
      for (let n = 1; n <= (count as number); n++)
        for (const i of instances)
          lines.push({
            service: i.service,
            instance: i.index,
            stream: stream as "stdout" | "stderr",
            line: count === 1 ? b.line : `${b.line} #${n}`,
          });
      substrate.writeLogs(uuid, lines);
      return { status: "ok", lines: lines.length };
    });
  };
}
