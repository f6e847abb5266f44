/**
 * The two JSON error envelopes of our HTTP surfaces. Handlers build errors with these
 * helpers only, so every refusal on one surface has the same shape.
 */

/** Tenant API (providerd): `{"error": "...", "code": <http status>, "reason"?: "..."}`. */
export interface TenantErrorBody {
  error: string;
  code: number;
  reason?: string;
}

export function tenantError(status: number, error: string, reason?: string): TenantErrorBody {
  return reason === undefined ? { error, code: status } : { error, code: status, reason };
}

const MAX_ERROR_CHARS = 512;

/** A backend's failure text, made safe to relay to a tenant: no control characters, bounded. */
export function tenantSafeText(text: string): string {
  const flat = text.replace(/[\n\t]/g, " ").replace(/\p{Cc}/gu, "");
  return flat.length > MAX_ERROR_CHARS ? `${flat.slice(0, MAX_ERROR_CHARS)}…` : flat;
}

/** Backend API: `{"error": "...", "code"?: "<machine code>", "validation_code"?: "..."}`. */
export interface BackendErrorBody {
  error: string;
  code?: string;
  validation_code?: string;
}

export type ValidationCode = "unknown_sku" | "invalid_manifest" | "image_not_allowed";

export function backendError(error: string, extra: { code?: string; validation_code?: ValidationCode } = {}) {
  const body: BackendErrorBody = { error };
  if (extra.code !== undefined) body.code = extra.code;
  if (extra.validation_code !== undefined) body.validation_code = extra.validation_code;
  return body;
}

/**
 * Reads a backend error body the way providerd must: an envelope needs a non-empty
 * string `error`; anything else is "malformed" and never treated as a validation verdict.
 */
export function parseBackendError(body: unknown): BackendErrorBody | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const { error, code, validation_code } = body as Record<string, unknown>;
  if (typeof error !== "string" || error === "") return undefined;
  const out: BackendErrorBody = { error };
  if (typeof code === "string" && code !== "") out.code = code;
  if (typeof validation_code === "string" && validation_code !== "") out.validation_code = validation_code;
  return out;
}
