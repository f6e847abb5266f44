import { randomUUID } from "node:crypto";

/**
 * UUIDs: the rules at our edges, minting, and the 16 raw bytes the placement store keeps.
 * Operation and maintenance ids are ours and must be canonical lowercase RFC 4122
 * version 4. Lease, SKU and provider UUIDs come from the chain, which mints version 7,
 * so for those we require only the canonical lowercase form.
 */
/** Canonical lowercase 8-4-4-4-12 hex (exported for schemas that must show the pattern). */
export const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Canonical lowercase v4 (version nibble 4, RFC 4122 variant). */
export function isUuidV4(value: unknown): value is string {
  return typeof value === "string" && value.length === 36 && V4.test(value);
}

/** Canonical lowercase 8-4-4-4-12 hex of any version (chain-minted ids). */
export function isCanonicalUuid(value: unknown): value is string {
  return typeof value === "string" && value.length === 36 && CANONICAL_UUID.test(value);
}

/** The all-zero UUID: canonical in form, but never a lease the chain minted. */
export const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** A lease UUID at our edges: canonical lowercase of any version, and not the nil UUID. */
export function isLeaseUuid(value: unknown): value is string {
  return isCanonicalUuid(value) && value !== NIL_UUID;
}

export function newUuidV4(): string {
  return randomUUID();
}

/** Canonical UUID text ↔ its 16 raw bytes (the placement store's stored form). */
export function uuidBytes(uuid: string): Buffer {
  return Buffer.from(uuid.replaceAll("-", ""), "hex");
}

export function uuidText(bytes: Buffer): string {
  const h = bytes.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
