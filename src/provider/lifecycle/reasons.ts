import type { MutationOutcome } from "../backend-client/index.ts";

/**
 * The reasons providerd writes on chain when it rejects a PENDING lease. They end up in
 * public state, so they are short fixed phrases or the backend's own tenant-safe text,
 * never internal error detail. (The chain adapter strips control characters and caps
 * the length at 256 bytes.)
 */
export const REJECT_REASONS = {
  provisioningFailed: "provisioning failed",
  invalidSku: "invalid SKU",
  invalidManifest: "invalid manifest",
  imageNotAllowed: "image not allowed",
  validationError: "validation error",
  insufficientResources: "insufficient resources",
  payloadCorrupted: "payload corrupted",
  /** RestoreFailed: a restore into the lease did not complete (its data went back to the source). */
  restoreFailed: "restore failed",
  /** BackendStorageLost: the operator retired the lease's backend as lost (reject or close). */
  backendStorageLost: "BackendStorageLost",
} as const;

type Refusal = Extract<MutationOutcome, { kind: "refused" }>;

/**
 * What a definite provision refusal means on chain: a reason to reject with, or
 * `undefined` when the refusal says nothing about the lease itself (a 409 — the
 * backend already knows this lease — is left to recovery, never rejected).
 */
export function rejectionForRefusal(refusal: Refusal): string | undefined {
  // The backend's text says what to fix (its envelope's `error` is curated for tenants);
  // the tenant reads it back from the chain and from GET /provision.
  const detail = (phrase: string) => {
    const text = (refusal.error ?? "").trim();
    return text === "" || text === phrase ? phrase : `${phrase}: ${text}`;
  };
  switch (refusal.validationCode) {
    case "unknown_sku":
      return REJECT_REASONS.invalidSku;
    case "invalid_manifest":
      return detail(REJECT_REASONS.invalidManifest);
    case "image_not_allowed":
      return detail(REJECT_REASONS.imageNotAllowed);
  }
  if (refusal.status === 400) return detail(REJECT_REASONS.validationError);
  if (refusal.status === 503) return REJECT_REASONS.insufficientResources;
  return undefined;
}

/**
 * A backend `failed` callback's text (the backend's curated message), or the generic phrase
 * of the operation when it sent none.
 */
export function rejectionForFailure(
  error: string | undefined,
  kind: "provision" | "restore" = "provision",
): string {
  const text = (error ?? "").trim();
  if (text !== "") return text;
  return kind === "restore" ? REJECT_REASONS.restoreFailed : REJECT_REASONS.provisioningFailed;
}
