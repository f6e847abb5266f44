import type { FastifyInstance } from "fastify";
import { FredError } from "../../../core/errors.ts";
import { readRouted, routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext, tenantRoute } from "../context.ts";
import { refuse } from "../errors.ts";
import type { Release, ReleasesBody } from "../schemas/lease.ts";

/**
 * `GET /v1/leases/{uuid}/releases` (access token, no replay, any state): the owner's
 * release history. Only the documented fields are relayed; a failed release without a
 * reason reads as `Unknown`.
 */
const STRING_FIELDS = ["image", "status", "created_at", "reason", "message", "manifest"] as const;

export function tenantRelease(raw: Record<string, unknown>): Release {
  if (typeof raw.version !== "number" || !Number.isInteger(raw.version)) {
    throw new FredError("ERR_BACKEND_MALFORMED", "release without an integer version");
  }
  const out: Release = { version: raw.version };
  for (const key of STRING_FIELDS) {
    const v = raw[key];
    if (v === undefined || v === null || (v === "" && key !== "image" && key !== "status")) continue;
    if (typeof v !== "string") throw new FredError("ERR_BACKEND_MALFORMED", `release ${key} is not a string`);
    out[key] = v;
  }
  if (out.status === "failed" && out.reason === undefined) out.reason = "Unknown";
  return out;
}

export function registerReleasesRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { clients, config } = ctx.deps;
  app.get(
    "/v1/leases/:lease_uuid/releases",
    tenantRoute(ctx, async (req, reply, scope) => {
      const { uuid, claims } = await authorizeLease(ctx, req, reply, { kind: "access", replay: false });
      const raw = await readRouted(routeRead(ctx.deps, clients, uuid), clients, (c) =>
        c.releases(uuid, scope.signal),
      );
      if (raw === undefined) throw refuse.notProvisioned();
      let releases: Release[];
      try {
        releases = raw.map(tenantRelease);
      } catch (err) {
        throw refuse.badGateway(err);
      }
      return {
        status: 200,
        body: {
          lease_uuid: uuid,
          tenant: claims.tenant,
          provider_uuid: config.providerUuid,
          releases,
        } satisfies ReleasesBody,
      };
    }),
  );
}
