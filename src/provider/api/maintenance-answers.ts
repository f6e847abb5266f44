import type { ErrorCode } from "../../core/errors.ts";
import {
  type CommandKind,
  invalidStateFor,
  MaintenanceRefused,
  type Refusal,
  type StoredAnswer,
} from "../maintenance/index.ts";
import { ApiError, refuse } from "./errors.ts";

/**
 * The tenant answers of restart and update, worded once. The maintenance service says
 * why it refused (`MaintenanceRefused`); `maintenanceAnswer` words it at the tenant API's
 * error edge. A settled command's answer is stored with it and replayed to an exact
 * retry; `asApiError` turns a stored answer back into the refusal the edge writes. Where the condition is the reference's, the
 * `error` text is the reference's literal text (clients match on it: they retry a 409
 * only on "invalid state"); our `reason` tells the cases apart.
 */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: "ERR_API_MAINTENANCE_REFUSED",
  404: "ERR_API_NOT_PROVISIONED",
  409: "ERR_API_MAINTENANCE_CONFLICT",
  410: "ERR_API_MAINTENANCE_EXPIRED",
  503: "ERR_API_MAINTENANCE_REFUSED",
};

export function asApiError(a: StoredAnswer): ApiError {
  return new ApiError(
    CODE_BY_STATUS[a.status] ?? "ERR_API_MAINTENANCE_REFUSED",
    a.status,
    a.error ?? "refused",
    a.reason === undefined ? {} : { reason: a.reason },
  );
}

export const maintenanceRefusal = {
  badKey: (what: string) => new ApiError("ERR_API_BAD_IDEMPOTENCY_KEY", 400, what),
  badUpdate: (what: string) => new ApiError("ERR_API_BAD_UPDATE", 400, what),
  conflict: (what: string) => new ApiError("ERR_API_MAINTENANCE_CONFLICT", 409, what),
  keyReused: () =>
    new ApiError("ERR_API_MAINTENANCE_CONFLICT", 409, "the Idempotency-Key was used for a different command"),
  /** Another command or lifecycle operation of the lease is in progress. */
  busy: (kind: CommandKind) =>
    new ApiError("ERR_API_MAINTENANCE_CONFLICT", 409, invalidStateFor(kind), {
      reason: "command_in_progress",
    }),
  /** The same 410 backend_storage_lost the reads answer (one wording, in errors.ts). */
  storageLost: refuse.storageLost,
  notActive: () =>
    new ApiError("ERR_API_MAINTENANCE_CONFLICT", 409, "lease not found or not active", {
      reason: "lease_not_active",
    }),
  reserved: () =>
    new ApiError(
      "ERR_API_MAINTENANCE_RESERVED",
      429,
      "maintenance capacity is reserved for tenants without pending work; retry after your pending work completes",
      { reason: "maintenance_capacity_reserved", retryAfterSeconds: 1 },
    ),
  full: () =>
    new ApiError("ERR_API_MAINTENANCE_FULL", 503, "maintenance capacity is exhausted; retry later", {
      retryAfterSeconds: 1,
    }),
  pending: (cause?: unknown) =>
    new ApiError(
      "ERR_API_MAINTENANCE_PENDING",
      503,
      "the command is recorded but could not be delivered yet; it is retried automatically",
      { retryAfterSeconds: 1, ...(cause === undefined ? {} : { cause }) },
    ),
  backendCapacity: () =>
    new ApiError("ERR_API_MAINTENANCE_PENDING", 503, "insufficient resources", { retryAfterSeconds: 1 }),
  unrecorded: (cause: unknown) =>
    new ApiError("ERR_API_MAINTENANCE_RECORD", 500, "internal server error", { cause }),
  unavailable: (cause?: unknown) =>
    new ApiError("ERR_API_MAINTENANCE_UNAVAILABLE", 503, "service temporarily unavailable", {
      retryAfterSeconds: 1,
      ...(cause === undefined ? {} : { cause }),
    }),
};

/** A refusal of the maintenance service, as the tenant reads it; any other error passes. */
export function maintenanceAnswer(err: unknown): unknown {
  return err instanceof MaintenanceRefused ? answerFor(err.refusal, err.cause) : err;
}

function answerFor(r: Refusal, cause: unknown): ApiError {
  switch (r.kind) {
    case "storage-lost":
      return maintenanceRefusal.storageLost();
    case "key-reused":
      return maintenanceRefusal.keyReused();
    case "not-active":
      return maintenanceRefusal.notActive();
    case "busy":
      return maintenanceRefusal.busy(r.command);
    case "unavailable":
      return maintenanceRefusal.unavailable(cause);
    case "reserved":
      return maintenanceRefusal.reserved();
    case "full":
      return maintenanceRefusal.full();
    case "pending":
      return maintenanceRefusal.pending(cause);
    case "backend-capacity":
      return maintenanceRefusal.backendCapacity();
    case "unrecorded":
      return maintenanceRefusal.unrecorded(cause);
    case "answered":
      return asApiError(r.answer);
  }
}
