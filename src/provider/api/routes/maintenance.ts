// The tenant's maintenance routes: what POST restart and POST update share, and the
// restart route itself (update's body check is in update.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { TokenClaims } from "../../../auth/token.ts";
import { isUuidV4 } from "../../../core/uuid.ts";
import type { CommandKind, CommandRequest } from "../../maintenance/index.ts";
import { leaseUuidParam } from "../auth.ts";
import { type Answer, type RequestScope, type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import { maintenanceRefusal } from "../maintenance-answers.ts";

/**
 * What POST restart and POST update share, in the seed's order: the lease UUID (400), the
 * token's signature (401), then — before the replay-protected token is spent — the
 * Idempotency-Key (400: missing for a tenant not listed in
 * maintenance_legacy_idempotency_tenants, or the list is not ["*"]; repeated, or not a
 * canonical UUIDv4) and the
 * route's own input check; then the token is spent and the chain's lease read (503 when it
 * cannot be read or is not found, 403 for another tenant's). The command itself is the
 * maintenance service's (journal, backend, answers).
 */
export const IDEMPOTENCY_HEADER = "idempotency-key";

type KeyHeader = { kind: "missing" } | { kind: "bad"; why: string } | { kind: "ok"; key: string };

function idempotencyKey(req: FastifyRequest): KeyHeader {
  const raw = req.raw.rawHeaders;
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === IDEMPOTENCY_HEADER) values.push(raw[i + 1]!);
  }
  if (values.length === 0) return { kind: "missing" };
  if (values.length > 1) return { kind: "bad", why: "Idempotency-Key must be given once" };
  const key = values[0]!.trim();
  return isUuidV4(key)
    ? { kind: "ok", key }
    : { kind: "bad", why: "Idempotency-Key must be a canonical UUIDv4" };
}

export interface MaintenanceRoute<Input> {
  kind: CommandKind;
  /** Reads the request's input before authentication (the update's body). */
  read(req: FastifyRequest, scope: RequestScope): Promise<Input>;
  /** Validates it once the signature verified, before the token is spent; the payload, if any. */
  check(input: Input): Buffer | undefined;
}

export function registerMaintenanceRoute<Input>(
  app: FastifyInstance,
  ctx: TenantContext,
  route: MaintenanceRoute<Input>,
): void {
  const path = `/v1/leases/:lease_uuid/${route.kind}`;
  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  void app.register(async (scoped) => {
    // The body (if any) is read by the handler, whatever its content type.
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
    scoped.post(
      path,
      tenantRoute(ctx, (req, reply, scope) => handle(ctx, route, req, reply, scope)),
    );
  });
}

async function handle<Input>(
  ctx: TenantContext,
  route: MaintenanceRoute<Input>,
  req: FastifyRequest,
  reply: FastifyReply,
  scope: RequestScope,
): Promise<Answer> {
  const uuid = leaseUuidParam(req);
  const header = idempotencyKey(req);
  const input = await route.read(req, scope);
  const m = ctx.deps.maintenance;
  let payload: Buffer | undefined;
  let legacy = false;
  const claims: TokenClaims = await ctx.auth.authenticate(req, reply, uuid, {
    kind: "access",
    replay: true,
    beforeSpend: (c) => {
      if (header.kind === "bad") throw maintenanceRefusal.badKey(header.why);
      if (header.kind === "missing") {
        if (m === undefined || !m.isLegacyTenant(c.tenant))
          throw maintenanceRefusal.badKey("Idempotency-Key header is required");
        legacy = true;
      }
      payload = route.check(input);
    },
  });
  if (m === undefined) throw maintenanceRefusal.unavailable();
  let lease: Awaited<ReturnType<typeof ctx.leases.read>>;
  try {
    lease = await ctx.leases.read(uuid);
  } catch (err) {
    // The seed's restart/update answer a chain that cannot be read with 503 (retry), not 500.
    throw err instanceof ApiError && err.status === 503 ? err : refuse.unavailable("ERR_API_CHAIN_READ", err);
  }
  if (lease === undefined) throw refuse.unavailable("ERR_API_CHAIN_READ");
  if (lease.tenant !== claims.tenant || lease.providerUuid !== ctx.deps.config.providerUuid) {
    throw refuse.forbidden();
  }
  if (legacy) m.legacyKeyUsed(claims.tenant, uuid);
  const request: CommandRequest = {
    leaseUuid: uuid,
    tenant: claims.tenant,
    leaseState: lease.state,
    kind: route.kind,
    payload,
    key: header.kind === "ok" ? { idempotencyKey: header.key } : { tokenKey: claims.replayKey },
  };
  return m.command(request, scope.signal);
}

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
