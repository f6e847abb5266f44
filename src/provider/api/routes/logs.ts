import type { FastifyInstance, FastifyRequest } from "fastify";
import { readRouted, routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import { LOG_CONTENT_BUDGET_BYTES, type LogAdmission, logCapacity } from "../log-admission.ts";

/**
 * `GET /v1/leases/{uuid}/logs?tail=N` (access token, no replay, any state): the owner's
 * container logs, `tail` lines per container (default 100, 1..10000). Admission (see
 * log-admission.ts) bounds how many run and how much is materialised at once; the slot
 * is held until the answer is written, within the listener's write deadline.
 */
export const DEFAULT_TAIL = 100;
export const MAX_TAIL = 10_000;

export function parseTail(req: FastifyRequest): number {
  const raw = (req.query as Record<string, unknown> | undefined)?.tail;
  if (raw === undefined || raw === "") return DEFAULT_TAIL;
  if (typeof raw !== "string" || !/^\d{1,6}$/.test(raw) || Number(raw) < 1) {
    throw new ApiError("ERR_API_BAD_TAIL", 400, "tail must be a positive integer");
  }
  if (Number(raw) > MAX_TAIL) throw new ApiError("ERR_API_BAD_TAIL", 400, `tail must not exceed ${MAX_TAIL}`);
  return Number(raw);
}

export function registerLogsRoute(app: FastifyInstance, ctx: TenantContext, admission: LogAdmission): void {
  const { store, clients, config } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/logs",
    tenantRoute(ctx, async (req, reply, scope) => {
      const ticket = admission.admit(scope.signal);
      // The slot is held until the answer is written (the listener's write deadline bounds that).
      reply.raw.once("close", () => ticket.release());
      const { uuid, claims } = await authorizeLease(ctx, req, reply, { kind: "access", replay: false });
      const tail = parseTail(req);
      const route = routeRead(store, clients, uuid);
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
      });
      if (Buffer.byteLength(body) > LOG_CONTENT_BUDGET_BYTES) throw logCapacity();
      reply.type("application/json");
      return { status: 200, body };
    }),
  );
}
