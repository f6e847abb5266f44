import type { FastifyInstance } from "fastify";
import { parseStrictJson } from "../../../core/encoding.ts";
import { tenantSafeText } from "../../../core/envelope.ts";
import { isBillingOnly } from "../../../core/lease-rules.ts";
import { CANONICAL_UUID } from "../../../core/uuid.ts";
import type { RestoreOutcome } from "../../retention/index.ts";
import { leaseUuidParam } from "../auth.ts";
import { type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import type { RestoreAccepted } from "../schemas/lease.ts";
import { readBody } from "./data.ts";

/**
 * `POST /v1/leases/{uuid}/restore` (access token, replay-protected): adopt the retained data
 * of `from_lease_uuid` into this fresh PENDING lease. The checks run in the reference's
 * order — path, token (spent), body, the target's chain record (404/403), billing-only
 * (400 whatever its state), PENDING (409) — then the restore application
 * (src/provider/retention) claims both leases, admits durably and calls the backend. What
 * the backend's answer proves decides the status; its text reaches the tenant only when it
 * is a contract refusal meant for them (bounded, control characters stripped). Where the
 * condition is the reference's, the `error` text is the reference's literal text.
 */
const DEMOTE_PREFIX = "retained data exceeds the requested smaller tier";

const busy = (reason: "source_busy" | "target_busy") =>
  new ApiError("ERR_API_RESTORE_CONFLICT", 409, "lease is already being provisioned or restored", { reason });
const bad = (message: string, reason?: string) =>
  new ApiError("ERR_API_BAD_RESTORE", 400, message, reason === undefined ? {} : { reason });
const noSource = () => refuse.leaseNotFound("no retained data found for that lease");

/** `{"from_lease_uuid": "<uuid>"}`, read after the token is spent (the reference's order and texts). */
function fromLeaseUuid(body: Buffer, max: number): string {
  let parsed: unknown;
  try {
    parsed = parseStrictJson(body, max);
  } catch {
    throw bad("invalid request body");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw bad("invalid request body");
  const from = (parsed as { from_lease_uuid?: unknown }).from_lease_uuid;
  if (from === undefined || from === null || from === "") throw bad("from_lease_uuid is required");
  if (typeof from !== "string") throw bad("invalid request body");
  if (!CANONICAL_UUID.test(from)) throw bad("from_lease_uuid is not a valid UUID");
  return from;
}

/** The tenant-facing answer of a restore that was not accepted. */
export function restoreRefusal(o: Exclude<RestoreOutcome, { kind: "accepted" }>): ApiError {
  switch (o.kind) {
    case "source_busy":
    case "target_busy":
      return busy(o.kind);
    case "target_not_pending":
      return new ApiError(
        "ERR_API_RESTORE_CONFLICT",
        409,
        "lease is not pending; only a fresh lease can be restored into",
        { reason: "target_not_pending" },
      );
    case "source_not_found":
      return noSource();
    case "storage_lost":
      return refuse.storageLost();
    case "unavailable":
      return refuse.unavailable("ERR_API_RESTORE_UNAVAILABLE", new Error(o.detail));
    case "ambiguous":
      return o.malformed
        ? new ApiError(
            "ERR_API_RESTORE_BAD_GATEWAY",
            502,
            "the provider backend returned an unusable error; the request was not applied",
            { cause: new Error(o.detail) },
          )
        : new ApiError("ERR_API_RESTORE_AMBIGUOUS", 500, "internal server error", {
            cause: new Error(o.detail),
          });
    case "refused":
      return refusedByBackend(o);
  }
}

function refusedByBackend(o: Extract<RestoreOutcome, { kind: "refused" }>): ApiError {
  const text = tenantSafeText(o.error);
  if (o.status === 422 && o.code === "demote_exceeds_tier") {
    const message = text.startsWith(DEMOTE_PREFIX) ? text : `${DEMOTE_PREFIX}: ${text}`;
    return new ApiError("ERR_API_RESTORE_TIER", 422, message);
  }
  // A bare 422 is the contract's "no retained data" (also any backend without retention).
  if (o.status === 422) return noSource();
  if (o.status === 400) return bad(text === "" ? "the restore request was rejected as invalid" : text);
  if (o.status === 409)
    return new ApiError("ERR_API_RESTORE_CONFLICT", 409, "lease not in a restorable state");
  return new ApiError("ERR_API_RESTORE_UNAVAILABLE", 503, "insufficient resources to restore", {
    retryAfterSeconds: 1,
  });
}

export function registerRestoreRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { config } = ctx.deps;
  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  void app.register(async (scoped) => {
    // The body is read by the handler, after the token is spent, whatever its content type.
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
    scoped.post(
      "/v1/leases/:lease_uuid/restore",
      tenantRoute(ctx, async (req, reply, scope) => {
        const uuid = leaseUuidParam(req);
        const claims = await ctx.auth.authenticate(req, reply, uuid, { kind: "access", replay: true });
        const raw = await readBody(req.raw, config.maxRequestBodySize, scope.signal);
        const source = fromLeaseUuid(raw, config.maxRequestBodySize);
        if (source === uuid) throw bad("from_lease_uuid must name another lease than the target");
        const target = await ctx.leases.owned(claims);
        if (
          isBillingOnly(
            target.items.map((i) => i.skuUuid),
            config.billingOnlySkus,
          )
        )
          throw bad("lease is billing-only; nothing can be restored into it", "billing_only");
        if (target.state !== "LEASE_STATE_PENDING") throw restoreRefusal({ kind: "target_not_pending" });
        const restorer = ctx.deps.restorer;
        if (restorer === undefined) throw refuse.unavailable("ERR_API_RESTORE_UNAVAILABLE");
        const outcome = await restorer.restore({ target: uuid, source, tenant: claims.tenant }, scope.signal);
        if (outcome.kind !== "accepted") throw restoreRefusal(outcome);
        ctx.logger.info({ lease_uuid: uuid, from_lease_uuid: source }, "restore accepted");
        const accepted: RestoreAccepted = { status: "provisioning" };
        return { status: 202, body: accepted };
      }),
    );
  });
}
