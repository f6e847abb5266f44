import type { FastifyInstance, FastifyRequest } from "fastify";
import { execPath, leasePath, PATHS } from "../../core/backend-contract/index.ts";

const INVENTORY_PATHS: ReadonlySet<string> = new Set([PATHS.provisions, PATHS.retentions]);

/**
 * MOCK_BACKEND_HANG_INVENTORY: every signed `GET /provisions` and `GET /retentions` (pages
 * and lease_uuid lookups alike) is accepted and never answered, the way a backend whose
 * journal read is stuck behaves. It runs after the signature check (an unsigned read is
 * still refused 401) and ends only when the client gives up or the server stops; the socket
 * is then dropped with no response, so the reader sees a transport failure, never a body.
 * Per-lease reads (`/provisions/{uuid}`) and every other route answer as usual.
 * MOCK_BACKEND_HANG_EXEC uses the same hang for `GET /shell/{uuid}`: the upgrade is never answered.
 */
export function hangInventoryReads(app: FastifyInstance): void {
  hangMatching(app, (req) => req.method === "GET" && INVENTORY_PATHS.has(pathOf(req)));
}

/** MOCK_BACKEND_HANG_USAGE: every signed `GET /usage/{uuid}` hangs the same way. */
export function hangUsageReads(app: FastifyInstance): void {
  hangMatching(app, (req) => req.method === "GET" && pathOf(req).startsWith(leasePath("usage", "")));
}

const pathOf = (req: FastifyRequest) => req.url.split("?", 1)[0] as string;

/** MOCK_BACKEND_HANG_EXEC: every signed `GET /shell/{uuid}` (an upgrade) hangs the same way. */
export function hangExecUpgrades(app: FastifyInstance): void {
  hangMatching(app, (req) => req.method === "GET" && pathOf(req).startsWith(execPath("")));
}

/** Signed requests for which `match` is true are accepted and never answered (see above). */
export function hangMatching(app: FastifyInstance, match: (req: FastifyRequest) => boolean): void {
  const stopping = new AbortController();
  // preClose runs before the server waits for in-flight requests: the hangs must not hold it.
  app.addHook("preClose", async () => stopping.abort());
  app.addHook("preHandler", async (req, reply) => {
    if (!match(req)) return;
    const socket = req.raw.socket;
    await new Promise<void>((resolve) => {
      if (socket.destroyed || stopping.signal.aborted) return resolve();
      const done = () => {
        socket.off("close", done);
        stopping.signal.removeEventListener("abort", done);
        resolve();
      };
      socket.once("close", done);
      stopping.signal.addEventListener("abort", done, { once: true });
    });
    socket.destroy();
    reply.hijack();
  });
}
