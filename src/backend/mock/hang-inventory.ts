import type { FastifyInstance } from "fastify";
import { PATHS } from "../../core/backend-contract/index.ts";

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
export function hangInventoryReads(
  app: FastifyInstance,
  hangs: (path: string) => boolean = (path) => INVENTORY_PATHS.has(path),
): void {
  const stopping = new AbortController();
  // preClose runs before the server waits for in-flight requests: the hangs must not hold it.
  app.addHook("preClose", async () => stopping.abort());
  app.addHook("preHandler", async (req, reply) => {
    if (req.method !== "GET" || !hangs(req.url.split("?", 1)[0] as string)) return;
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
