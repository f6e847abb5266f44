import type { FastifyInstance } from "fastify";
import type { TenantContext } from "../context.ts";
import { registerMaintenanceRoute } from "./maintenance.ts";

/**
 * `POST /v1/leases/{uuid}/restart` (access token, replay-protected, Idempotency-Key): the
 * lease's containers are recreated from the same manifest, volumes kept. No body is read
 * (existing clients send none). 202 `{"status":"restarting"}` once the backend accepted.
 */
export function registerRestartRoute(app: FastifyInstance, ctx: TenantContext): void {
  registerMaintenanceRoute(app, ctx, {
    kind: "restart",
    read: () => Promise.resolve(undefined),
    check: () => undefined,
  });
}
