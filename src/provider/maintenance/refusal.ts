import { tenantSafeText } from "../../core/envelope.ts";
import { type ErrorCode, FredError } from "../../core/errors.ts";
import type { MutationOutcome } from "../backend-client/index.ts";
import type { CommandKind, Outcome, StoredAnswer } from "./journal.ts";

/**
 * Why the service did not answer a command with a 202. The service decides; the tenant
 * API words each live refusal at its one error edge (api/maintenance-answers.ts), so
 * this folder holds no HTTP. A settled command's answer is different: it is stored with
 * the command and replayed to exact retries, so its text is fixed here, when it is
 * settled (`answered`, `backendRefusalAnswer`, and `ANSWERS` in completion.ts).
 */
export type Refusal =
  /** The lease's backend was retired as lost: nothing can run there. */
  | { kind: "storage-lost" }
  /** The Idempotency-Key names another command of the lease. */
  | { kind: "key-reused" }
  | { kind: "not-active" }
  /** Another command or lifecycle operation of the lease is in progress. */
  | { kind: "busy"; command: CommandKind }
  /** No usable owner, no payload store, or the journal could not record the command. */
  | { kind: "unavailable" }
  | { kind: "reserved" }
  | { kind: "full" }
  /** Recorded, but not delivered yet; recovery retries it. */
  | { kind: "pending" }
  /** The backend refused it for capacity, before any effect; it stays recorded. */
  | { kind: "backend-capacity" }
  /** The backend accepted it, but the acceptance is not durable yet. */
  | { kind: "unrecorded" }
  /** The command is settled: its stored answer. */
  | { kind: "answered"; answer: StoredAnswer };

const CODES: Record<Exclude<Refusal["kind"], "answered">, ErrorCode> = {
  "storage-lost": "ERR_API_BACKEND_STORAGE_LOST",
  "key-reused": "ERR_API_MAINTENANCE_CONFLICT",
  "not-active": "ERR_API_MAINTENANCE_CONFLICT",
  busy: "ERR_API_MAINTENANCE_CONFLICT",
  unavailable: "ERR_API_MAINTENANCE_UNAVAILABLE",
  reserved: "ERR_API_MAINTENANCE_RESERVED",
  full: "ERR_API_MAINTENANCE_FULL",
  pending: "ERR_API_MAINTENANCE_PENDING",
  "backend-capacity": "ERR_API_MAINTENANCE_PENDING",
  unrecorded: "ERR_API_MAINTENANCE_RECORD",
};

export class MaintenanceRefused extends FredError {
  readonly refusal: Refusal;

  constructor(refusal: Refusal, cause?: unknown) {
    const code = refusal.kind === "answered" ? "ERR_API_MAINTENANCE_REFUSED" : CODES[refusal.kind];
    super(code, `maintenance command refused: ${refusal.kind}`, cause === undefined ? {} : { cause });
    this.name = "MaintenanceRefused";
    this.refusal = refusal;
  }
}

/** The reference's text for a command the lease's state does not allow (clients retry a 409 only on it). */
export const invalidStateFor = (kind: CommandKind) => `invalid state for ${kind}`;

/** The final answer of a command the backend definitely refused (a 503 never is one: see dispatch). */
export function backendRefusalAnswer(
  out: Extract<MutationOutcome, { kind: "refused" }>,
  kind: CommandKind,
): { outcome: Outcome; answer: StoredAnswer } {
  if (out.status === 409 && out.code === "maintenance_expired") {
    return {
      outcome: "expired",
      answer: {
        status: 410,
        error:
          "the command is older than the lease's retained maintenance history and did not run; send a new command with a new key",
        reason: "maintenance_expired",
      },
    };
  }
  switch (out.status) {
    case 400:
      return {
        outcome: "refused",
        answer: {
          status: 400,
          error:
            out.error !== ""
              ? tenantSafeText(out.error)
              : kind === "update"
                ? "the update request was rejected as invalid"
                : "the lease cannot be restarted",
        },
      };
    case 404:
      return { outcome: "refused", answer: { status: 404, error: "lease not yet provisioned" } };
    default:
      return {
        outcome: "refused",
        answer: { status: 409, error: invalidStateFor(kind), reason: "backend_invalid_state" },
      };
  }
}
