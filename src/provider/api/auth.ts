import type { FastifyReply, FastifyRequest } from "fastify";
import {
  TOKEN_MAX_AGE_SECONDS,
  type TokenClaims,
  type TokenKind,
  verifyTenantToken,
} from "../../auth/token.ts";
import type { RateBuckets } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { Logger } from "../../log.ts";
import { rateLimitHeaders } from "../http/edge.ts";
import type { ReplayStore } from "../store/index.ts";
import { ApiError, refuse } from "./errors.ts";

/**
 * Tenant authentication: the ADR-036 bearer token (src/auth verifies it), then replay
 * protection on the endpoints that need it, then the token's lease against the path.
 * Every token failure is the same 401 (which check failed is logged, never answered).
 * A verified token spends one token of its tenant's rate bucket (429 when empty), before
 * anything touches the replay store or the chain.
 * A replay store that cannot answer fails closed with 503: a token is never let through
 * because we could not tell whether it was used before.
 */
export interface AuthOptions {
  clock: Clock;
  bech32Prefix: string;
  /** Replay store; undefined disables replay protection (development only). */
  tokens: ReplayStore | undefined;
  logger: Logger;
  /** Per-tenant buckets (`tenant_rate_limit_*`), spent once a token verifies; undefined: off. */
  tenantLimit?: RateBuckets;
}

export interface AuthRequirement {
  kind: TokenKind;
  replay: boolean;
  /**
   * Checks that must pass once the signature verified but before the token is spent
   * (restart/update: the Idempotency-Key header and the body), so a bad request does not
   * cost the tenant its token. Throws the refusal.
   */
  beforeSpend?: (claims: TokenClaims) => void;
}

/** `Authorization: Bearer <token>`: scheme case-insensitive, split at the first space only. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== "string") return undefined;
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return undefined;
  return header.slice(space + 1);
}

/** The `{lease_uuid}` path segment, or a 400 when it is not a canonical UUID. */
export function leaseUuidParam(req: FastifyRequest): string {
  // The check `leaseParamsSchema` documents, without a schema parse on every request.
  const uuid = (req.params as { lease_uuid?: unknown } | undefined)?.lease_uuid;
  if (!isCanonicalUuid(uuid)) throw refuse.badLeaseUuid();
  return uuid;
}

export class TenantAuth {
  readonly #options: AuthOptions;

  constructor(opts: AuthOptions) {
    this.#options = opts;
  }

  /**
   * Verifies the request's token for `leaseUuid`. The replay check runs before the lease
   * comparison (as in the reference), so a replay-protected token is spent even when it
   * names another lease.
   */
  async authenticate(
    req: FastifyRequest,
    reply: FastifyReply,
    leaseUuid: string,
    need: AuthRequirement,
  ): Promise<TokenClaims> {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) throw refuse.unauthorized();
    let claims: TokenClaims;
    try {
      claims = verifyTenantToken(token, {
        nowMs: this.#options.clock.now(),
        prefix: this.#options.bech32Prefix,
      });
    } catch (err) {
      this.#options.logger.debug({ err, lease_uuid: leaseUuid }, "tenant token refused");
      throw refuse.unauthorized(err);
    }
    if (claims.kind !== need.kind) throw refuse.unauthorized();
    this.#limit(claims.tenant, reply);
    need.beforeSpend?.(claims);
    if (need.replay) await this.#spend(claims);
    if (claims.leaseUuid !== leaseUuid) {
      this.#options.logger.debug({ lease_uuid: leaseUuid }, "tenant token names another lease");
      throw refuse.unauthorized();
    }
    return claims;
  }

  #limit(tenant: string, reply: FastifyReply): void {
    const buckets = this.#options.tenantLimit;
    if (buckets === undefined) return;
    const verdict = buckets.consume(tenant);
    rateLimitHeaders(reply, verdict, Math.max(1, Math.ceil(buckets.burst / buckets.rps)));
    if (!verdict.allowed) {
      throw new ApiError("ERR_API_RATE_LIMITED", 429, "rate limit exceeded", {
        retryAfterSeconds: verdict.retryAfterSeconds,
      });
    }
  }

  async #spend(claims: TokenClaims): Promise<void> {
    const tracker = this.#options.tokens;
    if (tracker === undefined) return;
    // The row outlives the token's validity window, after which it could not verify anyway.
    const expiresAt = (claims.timestamp + TOKEN_MAX_AGE_SECONDS + 1) * 1000;
    let first: boolean;
    try {
      first = await tracker.tryUse(claims.replayKey, expiresAt, this.#options.clock.now());
    } catch (err) {
      throw refuse.unavailable("ERR_API_REPLAY_STORE", err);
    }
    if (!first) {
      this.#options.logger.warn(
        { lease_uuid: claims.leaseUuid, tenant: claims.tenant },
        "token replay refused",
      );
      throw refuse.unauthorized();
    }
  }

  /** Deletes replay rows whose tokens expired; a failure is only logged (the next sweep retries). */
  async sweep(): Promise<void> {
    try {
      await this.#options.tokens?.sweep(this.#options.clock.now());
    } catch (err) {
      this.#options.logger.warn({ err }, "token replay sweep failed");
    }
  }
}
