import type { FastifyInstance } from "fastify";
import type { UsageBody } from "../../../core/backend-contract/index.ts";
import { isFredError } from "../../../core/errors.ts";
import { backendReadFailure, ownerOrRefuse, routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";

/**
 * `GET /v1/leases/{uuid}/usage` (access token, no replay, any state): what the owner's
 * instances use now and the last hour of samples, as the lease's backend sampled them
 * (docs/tenant-api.md describes the body). The backend's body was decoded strictly by the
 * client (only the documented fields survive); it is relayed with the lease's identity.
 * A lease the backend holds but has not sampled yet (still starting) answers empty lists;
 * one with no confirmed owner is 404 (never placed) or 503 (placement unresolved).
 */
export type UsageTenantBody = { lease_uuid: string; tenant: string; provider_uuid: string } & UsageBody;

export const usageUnsupported = (cause: unknown) =>
  new ApiError("ERR_API_USAGE_UNSUPPORTED", 501, "usage is not supported by this lease's backend", {
    reason: "unsupported",
    cause,
  });

export function registerUsageRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { clients, config } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/usage",
    tenantRoute(ctx, async (req, reply, scope) => {
      const { uuid, claims } = await authorizeLease(ctx, req, reply, { kind: "access", replay: false });
      // Only a lease placed here runs anywhere: no search of every backend (which a
      // backend's silence could hold up), the confirmed owner or a refusal.
      const owner = ownerOrRefuse(routeRead(ctx.deps, clients, uuid));
      let usage: UsageBody | undefined;
      try {
        usage = await owner.usage(uuid, scope.signal);
      } catch (err) {
        // A 501 `unsupported` is the backend's definite answer, not a failure.
        if (isFredError(err, "ERR_BACKEND_UNSUPPORTED")) throw usageUnsupported(err);
        throw backendReadFailure(err);
      }
      if (usage === undefined) throw refuse.notProvisioned();
      return {
        status: 200,
        body: {
          lease_uuid: uuid,
          tenant: claims.tenant,
          provider_uuid: config.providerUuid,
          ...usage,
        } satisfies UsageTenantBody,
      };
    }),
  );
}
