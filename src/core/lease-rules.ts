/**
 * The rules every path applies to a chain lease: the event path, the reconciler's sweep,
 * the tenant API and the CLI all ask these questions, so each has one answer here and the
 * paths cannot disagree. Plain strings and structural types: core imports no adapter.
 */

/**
 * The only states that prove a lease ended: the chain never leaves them. PENDING and ACTIVE
 * are live; UNSPECIFIED, a number this build does not know, or a lease the chain does not
 * return prove nothing and keep every piece of state.
 */
export const TERMINAL_STATES: ReadonlySet<string> = new Set([
  "LEASE_STATE_CLOSED",
  "LEASE_STATE_REJECTED",
  "LEASE_STATE_EXPIRED",
]);

export function leaseEnded(state: string): boolean {
  return TERMINAL_STATES.has(state);
}

/** PENDING or ACTIVE: the lease lives on chain (any other state is ended or unknown). */
export function leaseLive(state: string): boolean {
  return state === "LEASE_STATE_PENDING" || state === "LEASE_STATE_ACTIVE";
}

/** A lease whose items all use billing-only SKUs is acknowledged and never provisioned. */
export function isBillingOnly(
  skus: readonly string[],
  billingOnlySkus: ReadonlySet<string> | readonly string[],
): boolean {
  const billingOnly = (s: string) =>
    "has" in billingOnlySkus ? billingOnlySkus.has(s) : billingOnlySkus.includes(s);
  return skus.length > 0 && skus.every(billingOnly);
}

/** What a provision needs to know of a stored payload to decide whether to send it. */
export interface PayloadCandidate {
  /** The hash the tenant's upload had (stays the meta_hash after its passwords are masked). */
  uploadSha256: string;
  /** Promoted by a completed update: it carries the new manifest's own hash. */
  promoted: boolean;
}

/**
 * A stored payload may be sent for a lease when its SHA-256 is the lease's meta_hash, or
 * when a completed update promoted it (its hash then no longer matches meta_hash, by design).
 * Anything else: keep waiting for the right payload.
 */
export function payloadAccepted(stored: PayloadCandidate, metaHash: string): boolean {
  return stored.promoted || stored.uploadSha256 === metaHash;
}

/** One lease item as the chain stores it. */
export interface ChainItem {
  skuUuid: string;
  quantity: bigint | number | string;
  serviceName: string;
  customDomain: string;
}

/** One lease item as the backend contract carries it. */
export interface ContractItem {
  sku: string;
  quantity: number;
  serviceName?: string;
  customDomain?: string;
}

/** The chain's items as the backend contract carries them (empty names and domains left out). */
export function contractItems(items: readonly ChainItem[]): ContractItem[] {
  return items.map((i) => ({
    sku: i.skuUuid,
    quantity: Number(i.quantity),
    ...(i.serviceName === "" ? {} : { serviceName: i.serviceName }),
    ...(i.customDomain === "" ? {} : { customDomain: i.customDomain }),
  }));
}
