import { createHash } from "node:crypto";
import { ripemd160 } from "@noble/hashes/legacy.js";
import { bech32 } from "@scure/base";

export const DEFAULT_BECH32_PREFIX = "manifest";

/** Cosmos account address: bech32(prefix, RIPEMD160(SHA256(compressed pubkey))). */
export function addressFromPubkey(compressedPubkey: Uint8Array, prefix = DEFAULT_BECH32_PREFIX): string {
  const sha = createHash("sha256").update(compressedPubkey).digest();
  return bech32.encode(prefix, bech32.toWords(ripemd160(sha)));
}

/** True when `address` is a well-formed bech32 account address with the given prefix. */
export function isAccountAddress(address: string, prefix = DEFAULT_BECH32_PREFIX): boolean {
  try {
    const decoded = bech32.decode(address as `${string}1${string}`);
    return decoded.prefix === prefix && bech32.fromWords(decoded.words).length === 20;
  } catch {
    return false;
  }
}
