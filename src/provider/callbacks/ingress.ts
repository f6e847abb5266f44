import type { FastifyInstance, FastifyReply } from "fastify";
import { HmacError, hmacSecret, SIGNATURE_HEADER, verifyRequest } from "../../auth/hmac.ts";
import { RateBuckets, withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { parseStrictJson } from "../../core/encoding.ts";
import { FredError, isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { BackendConfig } from "../config/index.ts";
import { noteRateLimited } from "../http/api-metrics.ts";
import type { ApplyResult, VerifiedCallback } from "../lifecycle/index.ts";
import { parseCallbackBody, parseCapability } from "./parse.ts";

/**
 * `POST /callbacks/provision`: the backend named by the body's backend_storage_id is
 * the only one whose keys (current, then previous) may verify the signature, over
 * callback_canonical_path_prefix + the request URI as received. 200 is returned only
 * after the result is durably applied (or terminally ignored as stale); anything that
 * stops the application — not started or shutting down (`ERR_NOT_READY` from the lifecycle),
 * the two-minute budget, a failure — is 503, so the backend keeps the callback queued
 * and retries.
 */
export const CALLBACK_PATH = "/callbacks/provision";
export const CALLBACK_BODY_LIMIT = 64 * 1024;
export const CALLBACK_APPLY_BUDGET_MS = 120_000;

export interface CallbackIngressOptions {
  backends: readonly BackendConfig[];
  /** Pinned storage ID by backend name (from the placement store). */
  pins: ReadonlyMap<string, string>;
  legacySecret: string;
  canonicalPathPrefix: string;
  clock: Clock;
  logger: Logger;
  /** Applies verified callbacks; rejects with ERR_NOT_READY while it cannot (→ 503). */
  lifecycle: { applyCallback(cb: VerifiedCallback): Promise<ApplyResult> };
  observe: (outcome: string) => void;
  applyBudgetMs?: number;
  /** Budgets of the pre-auth (per IP) and per-storage buckets (defaults 100/s, burst 200). */
  rateLimit?: { rps: number; burst: number };
}

interface KeyedBackend {
  config: BackendConfig;
  secrets: Buffer[];
}

export function registerCallbackIngress(app: FastifyInstance, o: CallbackIngressOptions): void {
  const byStorage = new Map<string, KeyedBackend>();
  for (const b of o.backends) {
    const sid = o.pins.get(b.name);
    if (sid === undefined) continue;
    const keys = b.hmacSecret !== "" ? [b.hmacSecret, b.hmacSecretPrevious] : [o.legacySecret];
    byStorage.set(sid, { config: b, secrets: keys.filter((k) => k !== "").map((k) => hmacSecret(k)) });
  }
  const rate = o.rateLimit ?? { rps: 100, burst: 200 };
  const preAuth = new RateBuckets(rate.rps, rate.burst, o.clock);
  const perStorage = new RateBuckets(rate.rps, rate.burst, o.clock);
  const budget = o.applyBudgetMs ?? CALLBACK_APPLY_BUDGET_MS;

  const refuse = (reply: FastifyReply, status: number, error: string, outcome: string) => {
    o.observe(outcome);
    return reply.code(status).send({ error, code: status });
  };

  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      "*",
      { parseAs: "buffer", bodyLimit: CALLBACK_BODY_LIMIT },
      (_req, body, done) => done(null, body),
    );
    scope.post(CALLBACK_PATH, async (req, reply) => {
      const raw = (req.body as Buffer | undefined) ?? Buffer.alloc(0);
      const wait = preAuth.take(req.ip);
      const q = req.url.indexOf("?");
      const capability = parseCapability(q < 0 ? "" : req.url.slice(q + 1));
      if ("ok" in capability) {
        if (wait > 0) return tooMany(reply, wait, o);
        return refuse(reply, 400, capability.problem, "bad_request");
      }
      let body: unknown;
      try {
        body = parseStrictJson(raw, CALLBACK_BODY_LIMIT);
      } catch {
        if (wait > 0) return tooMany(reply, wait, o);
        return refuse(reply, 400, "body is not valid JSON", "bad_request");
      }
      const parsed = parseCallbackBody(body, capability);
      if (!parsed.ok) {
        if (wait > 0) return tooMany(reply, wait, o);
        return refuse(reply, 400, parsed.problem, "bad_request");
      }
      const cb = parsed.callback;
      const backend = byStorage.get(cb.storageId);
      if (backend === undefined) {
        if (wait > 0) return tooMany(reply, wait, o);
        return refuse(reply, 401, "unauthorized", "unauthorized");
      }
      try {
        verifyRequest({
          header: req.headers[SIGNATURE_HEADER] as string | undefined,
          method: req.method,
          uri: req.url,
          body: raw,
          nowMs: o.clock.now(),
          secrets: backend.secrets,
          canonicalPathPrefix: o.canonicalPathPrefix,
        });
      } catch (err) {
        if (!(err instanceof HmacError)) throw err;
        if (wait > 0) return tooMany(reply, wait, o);
        return refuse(reply, 401, "unauthorized", "unauthorized");
      }
      // Verified: only this storage identity's own bucket applies from here on.
      const storageWait = perStorage.take(cb.storageId);
      if (storageWait > 0) return tooMany(reply, storageWait, o);
      if (backend.config.fenced) return refuse(reply, 403, "backend is fenced", "fenced");
      const verified: VerifiedCallback = {
        backend: backend.config.name,
        leaseUuid: cb.leaseUuid,
        capability: cb.capability,
        status: cb.status,
        error: cb.error,
        ...(cb.retained ? { retained: true } : {}),
        ...(cb.maintenanceId === undefined ? {} : { maintenanceId: cb.maintenanceId }),
        ...(cb.maintenanceAdmittedAt === undefined
          ? {}
          : { maintenanceAdmittedAt: cb.maintenanceAdmittedAt }),
      };
      const timedOut = () =>
        new FredError("ERR_CALLBACK_APPLY_TIMEOUT", `callback not applied within ${budget} ms`, {
          retryable: true,
        });
      try {
        // Past the budget the answer is 503 but the application is not cancelled: it runs in
        // the lease's queue and commits or not as a whole, and the backend's redelivery of
        // the same callback is applied idempotently. So `apply` takes no signal.
        const result = await withDeadline(o.clock, budget, undefined, timedOut, () =>
          o.lifecycle.applyCallback(verified),
        );
        o.observe(result);
        return reply.code(200).send();
      } catch (err) {
        if (isFredError(err, "ERR_NOT_READY"))
          return refuse(reply, 503, "callback application is not available", "unavailable");
        if (isFredError(err, "ERR_CALLBACK_APPLY_TIMEOUT")) {
          o.logger.warn({ err, lease_uuid: cb.leaseUuid }, "callback application timed out");
          return refuse(reply, 503, "callback application timed out", "timeout");
        }
        o.logger.error({ err, lease_uuid: cb.leaseUuid }, "callback application failed");
        return refuse(reply, 503, "callback application failed", "error");
      }
    });
  });
}

function tooMany(reply: FastifyReply, waitSeconds: number, o: CallbackIngressOptions) {
  o.observe("rate_limited");
  noteRateLimited(reply.request.raw, "callback");
  return reply
    .code(429)
    .header("retry-after", String(waitSeconds))
    .send({ error: "rate limit exceeded", code: 429 });
}
