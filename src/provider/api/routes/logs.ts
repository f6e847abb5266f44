import type { FastifyInstance, FastifyRequest } from "fastify";
import { readRouted, routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import { LOG_CONTENT_BUDGET_BYTES, type LogAdmission, logCapacity } from "../log-admission.ts";
import { DEFAULT_TAIL, type LogsBody, logsQuerySchema } from "../schemas/lease.ts";

/**
 * `GET /v1/leases/{uuid}/logs?tail=N` (access token, no replay, any state): the owner's
 * container logs, `tail` lines per container (default 100, 1..10000). Admission (see
 * log-admission.ts) bounds how many run and how much is materialised at once; the slot
 * is held until the answer is written, within the listener's write deadline.
 */
export { DEFAULT_TAIL, MAX_TAIL } from "../schemas/lease.ts";

export function parseTail(req: FastifyRequest): number {
  const query = logsQuerySchema.safeParse(req.query ?? {});
  if (!query.success) {
    throw new ApiError("ERR_API_BAD_TAIL", 400, query.error.issues[0]?.message ?? "invalid tail");
  }
  const tail = query.data.tail;
  return tail === undefined || tail === "" ? DEFAULT_TAIL : Number(tail);
}

export function registerLogsRoute(app: FastifyInstance, ctx: TenantContext, admission: LogAdmission): void {
  const { clients, config } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/logs",
    tenantRoute(ctx, async (req, reply, scope) => {
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
  );
}
