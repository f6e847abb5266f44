import type { FastifyInstance, FastifyRequest } from "fastify";
import { type BackendEngine, badRequest, notFound, parseLeaseUuid } from "../kit/index.ts";
import type { MockSubstrate } from "./substrate.ts";

/** The mock's failure-injection routes; signed like every contract route. */
export const LOSE_PATH = "/_mock/lose/:uuid";
export const RETAINED_SIZE_PATH = "/_mock/retained-size/:uuid";
/** `GET /_mock/exec-sessions`: `{"running": n}`, the shell commands still running. */
export const EXEC_SESSIONS_PATH = "/_mock/exec-sessions";

/**
 * `POST /_mock/lose/{lease_uuid}`: the lease's workload vanishes the way a crashed host
 * loses its containers. The journal keeps the lease; a recovery pass that starts after the
 * loss finds it missing and reports the lease `failed` on its lifecycle URL before this
 * answers 200. Not a deprovision: no tombstone, so a new operation may provision it again.
 * 404 when the lease is not known here or has no workload left to lose.
 */
function leaseParam(req: FastifyRequest): string {
  try {
    return parseLeaseUuid((req.params as { uuid: string }).uuid);
  } catch (err) {
    throw badRequest((err as Error).message);
  }
}

export function registerLoseRoute(substrate: MockSubstrate) {
  return (app: FastifyInstance, engine: BackendEngine): void => {
    app.get(EXEC_SESSIONS_PATH, async () => ({ running: substrate.execSessions.size }));
    app.post(LOSE_PATH, async (req: FastifyRequest) => {
      const uuid = leaseParam(req);
      if (engine.journal.getLease(uuid) === undefined) throw notFound();
      if (!substrate.lose(uuid)) throw notFound("lease has no workload to lose");
      await engine.recoverNow();
      return { status: "ok" };
    });
    // `POST /_mock/retained-size/{lease_uuid}` {"disk_mb": n}: what each fake volume of the
    // lease measures when it is retained (for cap and demote tests). 400 on a bad body.
    app.post(RETAINED_SIZE_PATH, async (req: FastifyRequest) => {
      const uuid = leaseParam(req);
      let mb: unknown;
      try {
        mb = (JSON.parse(String(req.body ?? "")) as { disk_mb?: unknown }).disk_mb;
      } catch {
        mb = undefined;
      }
      if (!Number.isInteger(mb) || (mb as number) < 0) throw badRequest("disk_mb must be an integer ≥ 0");
      substrate.setRetainedSize(uuid, mb as number);
      return { status: "ok" };
    });
  };
}
