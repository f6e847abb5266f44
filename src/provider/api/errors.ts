import type { FastifyReply } from "fastify";
import { tenantError } from "../../core/envelope.ts";
import { type ErrorCode, FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { type Limiter, noteRateLimited } from "../http/api-metrics.ts";

/**
 * The tenant API's one error edge. Handlers throw `ApiError` (status, a public message
 * written for tenants, an optional `reason`, an optional Retry-After); anything else is
 * an internal failure: logged with its detail, answered as a bare 500. Internal text
 * (SQLite, chain, backend messages) therefore never reaches a tenant.
 */
export class ApiError extends FredError {
  readonly status: number;
  readonly publicMessage: string;
  readonly reason: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    status: number,
    publicMessage: string,
    opts: { reason?: string; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(code, publicMessage, opts.cause === undefined ? {} : { cause: opts.cause });
    this.name = "ApiError";
    this.status = status;
    this.publicMessage = publicMessage;
    this.reason = opts.reason;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

/** The refusals every lease endpoint shares, so each is worded once. */
export const refuse = {
  badLeaseUuid: () => new ApiError("ERR_API_BAD_LEASE_UUID", 400, "invalid lease UUID format"),
  unauthorized: (cause?: unknown) =>
    new ApiError("ERR_API_UNAUTHORIZED", 401, "unauthorized", cause === undefined ? {} : { cause }),
  forbidden: () => new ApiError("ERR_API_FORBIDDEN", 403, "forbidden"),
  leaseNotFound: (detail = "lease not found") => new ApiError("ERR_API_LEASE_NOT_FOUND", 404, detail),
  notProvisioned: (detail = "lease not yet provisioned") =>
    new ApiError("ERR_API_NOT_PROVISIONED", 404, detail),
  chainRead: (cause: unknown) => new ApiError("ERR_API_CHAIN_READ", 500, "internal server error", { cause }),
  backendRead: (cause: unknown) =>
    new ApiError("ERR_API_BACKEND_READ", 500, "internal server error", { cause }),
  /** The backend answered off its contract (e.g. a 200 whose body does not decode): never a 404. */
  badGateway: (cause: unknown) =>
    new ApiError("ERR_API_BACKEND_BAD_GATEWAY", 502, "the provider backend returned an invalid response", {
      cause,
    }),
  unavailable: (code: ErrorCode, cause?: unknown) =>
    new ApiError(code, 503, "service temporarily unavailable", {
      retryAfterSeconds: 1,
      ...(cause === undefined ? {} : { cause }),
    }),
  timeout: () => new ApiError("ERR_API_TIMEOUT", 503, "request timeout"),
  storageLost: () =>
    new ApiError(
      "ERR_API_BACKEND_STORAGE_LOST",
      410,
      "the storage that held this lease is permanently lost",
      {
        reason: "backend_storage_lost",
      },
    ),
};

/** Which limiter each 429 code stands for (fred_api_rate_limited_total's label). */
const LIMITERS: Partial<Record<ErrorCode, Limiter>> = {
  ERR_API_RATE_LIMITED: "tenant",
  ERR_API_MAINTENANCE_RESERVED: "maintenance",
  ERR_API_SHELL_LEASE_LIMIT: "shell",
};

/** Writes `err` as the documented envelope; internal failures are logged, not sent. */
export function sendApiError(reply: FastifyReply, err: unknown, logger: Logger): FastifyReply {
  if (reply.sent) return reply;
  if (!(err instanceof ApiError)) {
    logger.error({ err }, "tenant request failed");
    return reply.code(500).send(tenantError(500, "internal server error"));
  }
  if (err.status >= 500) logger.warn({ err: err.cause ?? err, code: err.code }, "tenant request refused");
  if (err.retryAfterSeconds !== undefined) reply.header("retry-after", String(err.retryAfterSeconds));
  if (err.status === 429) noteRateLimited(reply.request.raw, LIMITERS[err.code] ?? "other");
  return reply.code(err.status).send(tenantError(err.status, err.publicMessage, err.reason));
}
