import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isFredError } from "../../../core/errors.ts";
import { isBillingOnly } from "../../../core/lease-rules.ts";
import { failpoint } from "../../../failpoints.ts";
import { type PayloadRecords, type PutResult, sha256Hex } from "../../store/index.ts";
import type { UploadOutcome } from "../api-counters.ts";
import { authorizeLease, type RequestScope, type TenantContext, tenantRoute } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import type { LeaseEventPublisher } from "../event-hub.ts";

/**
 * `POST /v1/leases/{uuid}/data` (payload token bound to the lease's meta_hash): the
 * tenant's manifest for a PENDING lease. The body is read only after the token and the
 * lease checks pass, is refused unless its SHA-256 equals the on-chain meta_hash, and is
 * fsynced before the 202 — so an accepted upload survives a crash. Provisioning starts
 * the moment the 202 is written. The manifest is not parsed here: the backend validates
 * it when it provisions.
 */
const bad = (message: string, reason?: string) =>
  new ApiError("ERR_API_BAD_PAYLOAD", 400, message, reason === undefined ? {} : { reason });
const notStored = (message: string, cause?: unknown) =>
  new ApiError("ERR_API_PAYLOAD_NOT_STORED", 409, message, cause === undefined ? {} : { cause });

/** The upload outcome a refusal stands for, where its status alone does not say (fred_payload_uploads_total). */
const outcomes = new WeakMap<ApiError, UploadOutcome>();
function tagged(err: ApiError, outcome: UploadOutcome): ApiError {
  outcomes.set(err, outcome);
  return err;
}

function uploadOutcome(err: unknown): UploadOutcome {
  if (!(err instanceof ApiError)) return "error";
  return outcomes.get(err) ?? (err.status >= 500 ? "error" : "invalid");
}

/** Reads the raw body up to `max` bytes; over it (or a broken stream) is a 400. */
/** The reference's text for a body that could not be read (too large, or the stream failed). */
const UNREADABLE_BODY = "failed to read request body";

export function readBody(raw: IncomingMessage, max: number, signal: AbortSignal): Promise<Buffer> {
  const declared = Number(raw.headers["content-length"] ?? Number.NaN);
  if (declared > max) return Promise.reject(tagged(bad(UNREADABLE_BODY), "too_large"));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: ApiError) => {
      cleanup();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) fail(tagged(bad(UNREADABLE_BODY), "too_large"));
      else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = () => fail(bad(UNREADABLE_BODY));
    const onAbort = () => fail(tagged(refuse.timeout(), "error"));
    const cleanup = () => {
      raw.off("data", onData).off("end", onEnd).off("error", onError);
      signal.removeEventListener("abort", onAbort);
    };
    raw.on("data", onData).once("end", onEnd).once("error", onError);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Stores the payload once and waits for its fsync; a write that did not reach the disk is undone. */
async function storeDurably(
  payloads: PayloadRecords,
  uuid: string,
  body: Buffer,
  now: number,
): Promise<void> {
  let stored: PutResult;
  try {
    if (await payloads.has(uuid)) throw tagged(notStored("payload already received"), "conflict");
    stored = await payloads.put(uuid, body, now);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    const conflict = isFredError(err, "ERR_PAYLOAD_CONFLICT");
    throw tagged(
      notStored(conflict ? "payload already received" : "payload could not be stored", err),
      conflict ? "conflict" : "error",
    );
  }
  if (stored !== "stored") throw tagged(notStored("payload already received"), "conflict");
  try {
    await payloads.durable();
  } catch (err) {
    try {
      await payloads.delete(uuid);
    } catch {
      // The row stays un-synced; the same upload is refused as a duplicate until an operator looks.
    }
    throw tagged(notStored("payload could not be stored", err), "error");
  }
}

export function registerDataRoute(
  app: FastifyInstance,
  ctx: TenantContext,
  events?: Pick<LeaseEventPublisher, "uploadAccepted">,
): void {
  const { config, payloads, logger } = ctx.deps;
  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  void app.register(async (scoped) => {
    // The body is read by the handler, after authentication, whatever its content type.
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
    scoped.post(
      "/v1/leases/:lease_uuid/data",
      tenantRoute(ctx, async (req, reply, scope) => {
        try {
          const answer = await upload(req, reply, scope);
          ctx.counters.upload("stored", answer.bytes);
          return { status: answer.status };
        } catch (err) {
          ctx.counters.upload(uploadOutcome(err));
          throw err;
        }
      }),
    );
  });

  async function upload(req: FastifyRequest, reply: FastifyReply, scope: RequestScope) {
    const answered = new Promise<void>((resolve) => reply.raw.once("close", resolve));
    const { uuid, claims, lease } = await authorizeLease(ctx, req, reply, {
      kind: "payload",
      replay: false,
    });
    const skus = lease.items.map((i) => i.skuUuid);
    if (isBillingOnly(skus, config.billingOnlySkus))
      throw bad("lease is billing-only; it takes no payload", "billing_only");
    if (lease.state !== "LEASE_STATE_PENDING") throw refuse.leaseNotFound("lease not pending");
    if (lease.metaHash === "") throw bad("lease does not expect payload");
    const signed = Buffer.from((claims.metaHash ?? "").toLowerCase(), "hex");
    const expected = Buffer.from(lease.metaHash, "hex");
    if (signed.length !== expected.length || !timingSafeEqual(signed, expected)) {
      logger.warn({ lease_uuid: uuid }, "payload token meta_hash does not match the lease");
      throw refuse.unauthorized();
    }
    const body = await readBody(req.raw, config.maxRequestBodySize, scope.signal);
    if (body.length === 0) throw bad("payload is empty");
    if (sha256Hex(body) !== lease.metaHash)
      throw tagged(bad("payload hash does not match meta_hash"), "hash_mismatch");
    if (payloads === undefined) throw tagged(notStored("payload store is not configured"), "error");
    await storeDurably(payloads, uuid, body, ctx.deps.clock.now());
    // Provisioning starts once the 202 is written (or the client is gone): the payload is on disk.
    // The payload is already durable; a failure to start provisioning here is logged for
    // the operator, never left as an unhandled rejection.
    answered
      .then(() => {
        failpoint("upload.after-accepted");
        ctx.deps.payloadStored(uuid);
        events?.uploadAccepted(uuid);
      })
      .catch((err: unknown) =>
        logger.warn({ err, lease_uuid: uuid }, "starting provisioning after upload failed"),
      );
    logger.info({ lease_uuid: uuid, bytes: body.length }, "payload received");
    return { status: 202, bytes: body.length };
  }
}
