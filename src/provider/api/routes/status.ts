import type { FastifyInstance } from "fastify";
import { routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { type DiagnosticsLookup, lookupDiagnostics } from "../diagnostics.ts";
import type { StatusBody } from "../schemas/lease.ts";

/**
 * `GET /v1/leases/{uuid}/status` (access token, no replay, any state): the chain state
 * as its protobuf enum name, what providerd holds for the lease, and — best effort —
 * the backend's provision status (coalesced per lease, at most one chain-read TTL old). A
 * backend that cannot answer only drops those fields.
 * `credit` (balance, burn per hour and depletion date of the tenant's credit, from the
 * credit monitor) is likewise dropped when the chain cannot be read.
 */
export function registerStatusRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { payloads, config, logger } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/status",
    tenantRoute(ctx, async (req, reply, scope) => {
      const { uuid, claims, lease } = await authorizeLease(ctx, req, reply, {
        kind: "access",
        replay: false,
      });
      let payloadReceived = false;
      try {
        payloadReceived = payloads?.has(uuid) ?? false;
      } catch (err) {
        logger.warn({ err, lease_uuid: uuid }, "payload store unreadable; status reports no payload");
      }
      const body: StatusBody = {
        lease_uuid: uuid,
        tenant: claims.tenant,
        provider_uuid: config.providerUuid,
        state: lease.state,
        requires_payload: lease.metaHash !== "",
        ...(lease.metaHash === "" ? {} : { meta_hash_hex: lease.metaHash }),
        payload_received: payloadReceived,
        provisioning_started: ctx.deps.provisioningStarted(uuid),
      };
      const found = await sharedDiagnostics(ctx, uuid, lease.state);
      if (found.kind === "found") {
        const d = found.diagnostics;
        body.provision_status = d.status;
        if (d.failCount > 0) body.fail_count = d.failCount;
        if (d.terminalBudget !== undefined) body.terminal_budget = d.terminalBudget;
        if (d.reason !== undefined) body.reason = d.reason;
        if (d.message !== undefined) body.message = d.message;
      } else if (found.kind === "unknown" && found.error !== undefined) {
        logger.warn({ err: found.error.cause, lease_uuid: uuid }, "status: provision lookup failed");
      }
      if (ctx.deps.credit !== undefined) {
        try {
          const credit = await ctx.deps.credit(claims.tenant, scope.signal);
          if (credit !== undefined) body.credit = credit;
        } catch (err) {
          logger.warn({ err, lease_uuid: uuid }, "status: credit read failed");
        }
      }
      return { status: 200, body };
    }),
  );
}

/**
 * One backend read per lease, shared by concurrent polls and reused within the TTL while
 * the chain state it was read beside stays the same (a lease that just turned ACTIVE is
 * read afresh); its deadline is its own, not the first caller's. A failed read is thrown out of the
 * coalescer so that it is never reused, and comes back here as "unknown".
 */
async function sharedDiagnostics(
  ctx: TenantContext,
  uuid: string,
  state: string,
): Promise<DiagnosticsLookup> {
  const { store, clients } = ctx.deps;
  try {
    return await ctx.statusReads.get(`${uuid} ${state}`, async () => {
      const signal = AbortSignal.timeout(ctx.requestTimeoutMs);
      const found = await lookupDiagnostics(routeRead(store, clients, uuid), clients, uuid, signal);
      if (found.kind === "unknown" && found.error !== undefined) throw found.error;
      return found;
    });
  } catch (err) {
    return { kind: "unknown", error: err as Error };
  }
}
