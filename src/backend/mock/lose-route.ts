import type { FastifyInstance, FastifyRequest } from "fastify";
import { type BackendEngine, badRequest, notFound, parseLeaseUuid } from "../kit/index.ts";
import type { MockSubstrate } from "./substrate.ts";

/** The mock's failure-injection route; signed like every contract route. */
export const LOSE_PATH = "/_mock/lose/:uuid";

/**
 * `POST /_mock/lose/{lease_uuid}`: the lease's workload vanishes the way a crashed host
 * loses its containers. The journal keeps the lease; a recovery pass that starts after the
 * loss finds it missing and reports the lease `failed` on its lifecycle URL before this
 * answers 200. Not a deprovision: no tombstone, so a new operation may provision it again.
 * 404 when the lease is not known here or has no workload left to lose.
 */
export function registerLoseRoute(substrate: MockSubstrate) {
  return (app: FastifyInstance, engine: BackendEngine): void => {
    app.post(LOSE_PATH, async (req: FastifyRequest) => {
      let uuid: string;
      try {
        uuid = parseLeaseUuid((req.params as { uuid: string }).uuid);
      } catch (err) {
        throw badRequest((err as Error).message);
      }
      if (engine.journal.getLease(uuid) === undefined) throw notFound();
      if (!substrate.lose(uuid)) throw notFound("lease has no workload to lose");
      await engine.recoverNow();
      return { status: "ok" };
    });
  };
}
