import type { FastifyInstance } from "fastify";
import { readRouted, routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import { LOG_CONTENT_BUDGET_BYTES, type LogAdmission, logCapacity } from "../log-admission.ts";
import type { LogFollows } from "../log-follows.ts";
import type { LogsBody } from "../schemas/lease.ts";
import { upgradeRoute } from "../websockets.ts";
import { logFollowHandlers } from "./log-follow.ts";
import { FOLLOW_NEEDS_UPGRADE, followMode, parseTail } from "./logs-query.ts";

/**
 * `GET /v1/leases/{uuid}/logs?tail=N` (access token, no replay, any state): the owner's
 * container logs, `tail` lines per container (default 100, 1..10000). Admission (see
 * log-admission.ts) bounds how many run and how much is materialised at once; the slot
 * is held until the answer is written, within the listener's write deadline.
 * With `follow=true` and a WebSocket upgrade the same path streams (log-follow.ts); so the
 * route is registered in the WebSocket scope (`app` here is that scope).
 */
export { DEFAULT_TAIL, MAX_TAIL } from "../schemas/lease.ts";
export { parseTail } from "./logs-query.ts";

export function registerLogsRoute(
  app: FastifyInstance,
  ctx: TenantContext,
  admission: LogAdmission,
  follows: LogFollows,
): void {
  const { clients, config } = ctx.deps;
  const follow = logFollowHandlers(ctx, follows);
  upgradeRoute(app, {
    url: "/v1/leases/:lease_uuid/logs",
    logger: ctx.deps.logger,
    ...follow,
    handler: tenantRoute(ctx, async (req, reply, scope) => {
      if (followMode(req) === "follow") throw new ApiError("ERR_API_BAD_QUERY", 400, FOLLOW_NEEDS_UPGRADE);
      const ticket = admission.admit(scope.signal);
      // The slot is held until the answer is written (the listener's write deadline bounds that).
      reply.raw.once("close", () => ticket.release());
      const { uuid, claims } = await authorizeLease(ctx, req, reply, { kind: "access", replay: false });
      const tail = parseTail(req);
      const route = routeRead(ctx.deps, clients, uuid);
      if (route.kind === "attempt" || route.kind === "unresolved") {
        throw refuse.unavailable("ERR_API_PLACEMENT_UNRESOLVED");
      }
      await ticket.responseSlot(scope.signal);
      const logs = await readRouted(route, clients, (c) => c.logs(uuid, tail, scope.signal));
      if (logs === undefined) throw refuse.notProvisioned("logs not found");
      const body = JSON.stringify({
        lease_uuid: uuid,
        tenant: claims.tenant,
        provider_uuid: config.providerUuid,
        logs,
      } satisfies LogsBody);
      if (Buffer.byteLength(body) > LOG_CONTENT_BUDGET_BYTES) throw logCapacity();
      reply.type("application/json");
      return { status: 200, body };
    }),
  });
}
