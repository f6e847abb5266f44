/**
 * Stateless x/billing checks (ValidateBasic, run at CheckTx): addresses, batch UUID lists,
 * lease items, DNS labels and custom domains.
 */
import type { LeaseItemInput } from "../../../chain/proto/index.ts";
import { isUuidV7 } from "../../economics/uuidv7.ts";
import type { RegisteredError } from "../../errors.ts";
import { addressProblem } from "../sku/validate.ts";
import { billingErrors } from "./errors.ts";

export const MAX_BATCH = 100;
export const MAX_QUANTITY = 1_000_000_000n;
export const MAX_REASON_BYTES = 256;
export const MAX_META_HASH = 64;
export const MAX_SERVICE_NAME = 63;
export const MAX_DOMAIN = 253;
const LABEL_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function checkAddress(err: RegisteredError, what: string, address: string, prefix: string): void {
  const problem = addressProblem(address, prefix);
  if (problem !== undefined) throw err.wrap(`invalid ${what} address: ${problem}`);
}

export function checkLeaseUuids(uuids: readonly string[]): void {
  if (uuids.length === 0) throw billingErrors.invalidLease.wrap("lease_uuids cannot be empty");
  if (uuids.length > MAX_BATCH) throw billingErrors.invalidLease.wrap(`at most ${MAX_BATCH} lease_uuids`);
  const seen = new Set<string>();
  for (const id of uuids) {
    if (!isUuidV7(id)) throw billingErrors.invalidLease.wrap(`invalid lease uuid ${JSON.stringify(id)}`);
    if (seen.has(id)) throw billingErrors.invalidLease.wrap(`duplicate lease uuid ${id}`);
    seen.add(id);
  }
}

export function isDnsLabel(name: string): boolean {
  return name.length <= MAX_SERVICE_NAME && LABEL_RE.test(name);
}

export function checkItems(items: readonly LeaseItemInput[], metaHash: Uint8Array): void {
  if (metaHash.length > MAX_META_HASH)
    throw billingErrors.invalidMetaHash.wrap(`meta_hash above ${MAX_META_HASH} bytes`);
  if (items.length === 0) throw billingErrors.emptyItems.error();
  if (items.length > MAX_BATCH) throw billingErrors.tooManyItems.wrap(`at most ${MAX_BATCH} items`);
  const named = items.filter((i) => i.serviceName !== "").length;
  if (named !== 0 && named !== items.length)
    throw billingErrors.invalidServiceName.wrap("either every item has a service_name or none has");
  const skus = new Set<string>();
  const names = new Set<string>();
  for (const item of items) {
    if (!isUuidV7(item.skuUuid))
      throw billingErrors.invalidLease.wrap(`invalid sku uuid ${JSON.stringify(item.skuUuid)}`);
    if (item.quantity < 1n || item.quantity > MAX_QUANTITY)
      throw billingErrors.invalidQuantity.wrap(`quantity must be 1..${MAX_QUANTITY}`);
    if (named === 0) {
      if (skus.has(item.skuUuid)) throw billingErrors.duplicateSku.wrap(item.skuUuid);
      skus.add(item.skuUuid);
    } else {
      if (!isDnsLabel(item.serviceName))
        throw billingErrors.invalidServiceName.wrap(`${JSON.stringify(item.serviceName)} is not a DNS label`);
      if (names.has(item.serviceName))
        throw billingErrors.invalidServiceName.wrap(`duplicate ${item.serviceName}`);
      names.add(item.serviceName);
    }
  }
}

export function checkReason(reason: string, err: RegisteredError): void {
  if (Buffer.byteLength(reason) > MAX_REASON_BYTES) throw err.wrap(`reason above ${MAX_REASON_BYTES} bytes`);
}

/** Why `domain` is not an acceptable custom domain (lowercase FQDN), or undefined. */
export function fqdnProblem(domain: string, allowSingleLabel = false): string | undefined {
  if (domain.length === 0) return "empty domain";
  if (domain.length > MAX_DOMAIN) return `longer than ${MAX_DOMAIN}`;
  if (domain !== domain.toLowerCase()) return "must be lowercase";
  if (/[/\s@*?#]/.test(domain) || domain.includes("://")) return "contains a forbidden character";
  if (domain.startsWith(".") || domain.endsWith(".")) return "leading or trailing dot";
  const labels = domain.split(".");
  if (labels.length < 2 && !allowSingleLabel) return "needs at least one dot";
  if (!labels.every((l) => LABEL_RE.test(l))) return "every label must be a DNS label";
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return "last label is numeric";
  return undefined;
}

/** Control characters and other non-graphic code points removed (event hygiene). */
export function sanitize(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "");
}
