/**
 * Credit accounts live at a module-derived 32-byte address per tenant:
 *   inner = SHA256("billing/credit/" ‖ tenant bytes)
 *   addr  = SHA256(SHA256("module") ‖ "billing" ‖ 0x00 ‖ inner)
 * No state is needed, so both the chain and clients compute it.
 */
import { createHash } from "node:crypto";
import { bech32 } from "@scure/base";

const MODULE_TYPE_HASH = createHash("sha256").update("module").digest();
const CREDIT_PREFIX = Buffer.from("billing/credit/");
const MODULE_KEY = Buffer.concat([Buffer.from("billing"), Buffer.from([0])]);

export function creditAddressBytes(tenantBytes: Uint8Array): Uint8Array {
  const inner = createHash("sha256").update(CREDIT_PREFIX).update(tenantBytes).digest();
  return createHash("sha256").update(MODULE_TYPE_HASH).update(MODULE_KEY).update(inner).digest();
}

/** Bech32 credit address of `tenant` (same prefix as the tenant's address). */
export function deriveCreditAddress(tenant: string): string {
  const decoded = bech32.decode(tenant as `${string}1${string}`, 1023);
  const raw = creditAddressBytes(bech32.fromWords(decoded.words));
  return bech32.encode(decoded.prefix, bech32.toWords(raw), 1023);
}
