import { parseBackendError } from "../../core/envelope.ts";
import { parseStrictJson } from "../../core/strict-json.ts";

/**
 * What a backend's answer to a mutating request proves (README seed, restore section):
 *
 * - `accepted`: the expected 2xx — the backend owns the operation now.
 * - `refused`: a contract-conforming synchronous domain refusal — the backend did not
 *   and will not act on this request, so a write-ahead attempt may be cleared.
 * - `ambiguous`: anything else (timeout, transport error, generic 5xx, malformed or
 *   off-contract body, coded already_provisioned, unknown refusal code, identity
 *   mismatch, unvalidated 503) — the backend may have accepted, so the attempt stays.
 * - `not-sent`: nothing reached the backend (open circuit, fenced, unpinned, or the
 *   connection was refused: no byte of the request was delivered).
 */
export type MutationOutcome =
  | { kind: "accepted"; status: number; body: unknown }
  | {
      kind: "refused";
      status: number;
      /** Tenant-safe text from the backend envelope ("" when the body was empty). */
      error: string;
      code?: string;
      validationCode?: string;
    }
  | { kind: "ambiguous"; reason: AmbiguousReason; status?: number; detail: string }
  | {
      kind: "not-sent";
      reason: "circuit-open" | "fenced" | "not-pinned" | "connect-refused";
      detail: string;
    };

export type AmbiguousReason =
  | "timeout"
  | "transport"
  | "server-error"
  | "malformed"
  | "already-provisioned"
  | "unknown-code"
  | "identity"
  | "too-large"
  | "unexpected-status";

/** Contract refusals whose `code` may be absent or one of these; any other code is not understood. */
const REFUSAL_CODES: Record<number, ReadonlySet<string | undefined>> = {
  400: new Set([undefined]),
  409: new Set([undefined]),
  422: new Set([undefined, "demote_exceeds_tier"]),
  503: new Set(["insufficient_resources"]),
};
const VALIDATION_CODES = new Set([undefined, "unknown_sku", "invalid_manifest", "image_not_allowed"]);
const ENVELOPE_LIMIT = 64 * 1024;

/** Refusal codes one operation adds to the common table (by status). */
export type ExtraRefusals = Readonly<Record<number, readonly (string | undefined)[]>>;

export function classifyMutation(
  status: number,
  expected: number,
  body: Buffer,
  extra: ExtraRefusals = {},
): MutationOutcome {
  if (status === expected) {
    let parsed: unknown;
    if (body.length > 0) {
      try {
        parsed = parseStrictJson(body, ENVELOPE_LIMIT * 16);
      } catch {
        parsed = undefined;
      }
    }
    return { kind: "accepted", status, body: parsed };
  }
  if (status >= 200 && status < 300) {
    return {
      kind: "ambiguous",
      reason: "unexpected-status",
      status,
      detail: `expected ${expected}, got ${status}`,
    };
  }
  const more = extra[status];
  const common = REFUSAL_CODES[status];
  const allowed = more === undefined ? common : new Set([...(common ?? []), ...more]);
  if (body.length === 0) {
    // An empty body is tolerated only for 409 and 422.
    if (status === 409 || status === 422 || more !== undefined) return { kind: "refused", status, error: "" };
    return ambiguousFor(status, "empty error body");
  }
  let envelope: ReturnType<typeof parseBackendError>;
  try {
    envelope = parseBackendError(parseStrictJson(body, ENVELOPE_LIMIT));
  } catch {
    envelope = undefined;
  }
  if (envelope === undefined) {
    return {
      kind: "ambiguous",
      reason: "malformed",
      status,
      detail: "error body is not a backend error envelope",
    };
  }
  if (allowed === undefined) return ambiguousFor(status, envelope.error);
  if (status === 409 && envelope.code === "already_provisioned") {
    return { kind: "ambiguous", reason: "already-provisioned", status, detail: envelope.error };
  }
  if (!allowed.has(envelope.code) || !VALIDATION_CODES.has(envelope.validation_code)) {
    return {
      kind: "ambiguous",
      reason: "unknown-code",
      status,
      detail: `${envelope.code ?? envelope.validation_code ?? ""}: ${envelope.error}`,
    };
  }
  const out: MutationOutcome = { kind: "refused", status, error: envelope.error };
  if (envelope.code !== undefined) out.code = envelope.code;
  if (envelope.validation_code !== undefined) out.validationCode = envelope.validation_code;
  return out;
}

function ambiguousFor(status: number, detail: string): MutationOutcome {
  return {
    kind: "ambiguous",
    reason: status >= 500 ? "server-error" : "unexpected-status",
    status,
    detail,
  };
}

/**
 * Whether a response counts toward the circuit breaker. Domain answers (400, 404,
 * 409, 422, capacity 503) mean the backend is healthy and deciding; everything else
 * that is not 2xx suggests it is not.
 */
export function countsAsFailure(status: number, body: Buffer): boolean {
  if (status < 400) return false;
  if (status === 400 || status === 404 || status === 409 || status === 422) return false;
  if (status === 503) {
    try {
      return parseBackendError(parseStrictJson(body, ENVELOPE_LIMIT))?.code !== "insufficient_resources";
    } catch {
      return true;
    }
  }
  return true;
}
