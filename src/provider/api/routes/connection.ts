import type { FastifyInstance } from "fastify";
import type { LeaseInfo } from "../../backend-client/index.ts";
import { backendReadFailure, ownerOrRefuse, routeRead } from "../backend-route.ts";
import { connectionDetails } from "../connection-shape.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { refuse } from "../errors.ts";

/**
 * `GET /v1/leases/{uuid}/connection` (access token, replay-protected, ACTIVE only): where
 * the workload listens, read from its confirmed owner.
 */
export function registerConnectionRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { clients, config } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/connection",
    tenantRoute(ctx, async (req, reply, scope) => {
      const need = { kind: "access", replay: true } as const;
      const { uuid, lease } = await authorizeLease(ctx, req, reply, need, "LEASE_STATE_ACTIVE");
      const client = ownerOrRefuse(routeRead(ctx.deps, clients, uuid));
      let info: LeaseInfo | undefined;
      try {
        info = await client.info(uuid, scope.signal);
      } catch (err) {
        throw backendReadFailure(err);
      }
      if (info === undefined) throw refuse.notProvisioned();
      let connection: Record<string, unknown>;
      try {
        connection = connectionDetails(info);
      } catch (err) {
        throw refuse.badGateway(err);
      }
      return {
        status: 200,
        body: { lease_uuid: uuid, tenant: lease.tenant, provider_uuid: config.providerUuid, connection },
      };
    }),
  );
}
