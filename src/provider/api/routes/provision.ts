import type { FastifyInstance } from "fastify";
import { routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { type Diagnostics, lookupDiagnostics, rejectedDiagnostics } from "../diagnostics.ts";
import { refuse } from "../errors.ts";
import { parseInclude } from "../include.ts";
import type { ProvisionBody } from "../schemas/lease.ts";

/**
 * `GET /v1/leases/{uuid}/provision` (access token, no replay, any state): the backend's
 * diagnostics for the lease. The backend answers from its persisted diagnostics once the
 * workload is gone. "Not found" is said only when it is known (nothing was placed here,
 * or the confirmed owner has no record); an unresolved placement answers 503 instead.
 * A lease the chain rejected before any backend held it answers from the chain's
 * rejection reason (status failed, reason Rejected), as the seed's "after rejection" says.
 * `terminal_budget` is ours, not the reference's: only `?include=terminal_budget` adds it.
 */
export function registerProvisionRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { clients, config } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/provision",
    tenantRoute(ctx, async (req, reply, scope) => {
      const { uuid, claims, lease } = await authorizeLease(ctx, req, reply, {
        kind: "access",
        replay: false,
      });
      const include = parseInclude(req);
      const found = await lookupDiagnostics(routeRead(ctx.deps, clients, uuid), clients, uuid, scope.signal);
      // A lease rejected before any backend held it still answers, from the chain's record.
      const rejected = found.kind === "absent" ? rejectedDiagnostics(lease) : undefined;
      if (found.kind === "absent" && rejected === undefined)
        throw refuse.notProvisioned("provision not found");
      if (found.kind === "unknown") {
        throw found.error ?? refuse.unavailable("ERR_API_PLACEMENT_UNRESOLVED");
      }
      const d = found.kind === "found" ? found.diagnostics : (rejected as Diagnostics);
      const body: ProvisionBody = {
        lease_uuid: uuid,
        tenant: claims.tenant,
        provider_uuid: config.providerUuid,
        // An unsettled restart/update is reported as such, never as the ready before it.
        status: ctx.deps.maintenance?.inProgress(uuid) ?? d.status,
        fail_count: d.failCount,
      };
      if (include.has("terminal_budget") && d.terminalBudget !== undefined)
        body.terminal_budget = d.terminalBudget;
      if (d.reason !== undefined) body.reason = d.reason;
      if (d.message !== undefined) body.message = d.message;
      Object.assign(body, d.retained);
      return { status: 200, body };
    }),
  );
}
