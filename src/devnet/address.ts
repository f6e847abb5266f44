import { createHash } from "node:crypto";
import { bech32 } from "@scure/base";
import { sdkErrors } from "./errors.ts";

/**
 * Decodes a bech32 account address with the chain prefix; throws sdk code 7 (invalid
 * address) with the SDK's "decoding bech32 failed" wording, or `as` when given.
 */
export function decodeAddress(address: string, prefix: string, what = "address"): Uint8Array {
  if (address === "")
    throw sdkErrors.invalidAddress.wrap(`invalid ${what}: empty address string is not allowed`);
  let decoded: { prefix: string; words: number[] };
  try {
    decoded = bech32.decode(address as `${string}1${string}`, 1023);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw sdkErrors.invalidAddress.wrap(`invalid ${what}: decoding bech32 failed: ${reason}`);
  }
  if (decoded.prefix !== prefix) {
    throw sdkErrors.invalidAddress.wrap(
      `invalid ${what}: invalid Bech32 prefix; expected ${prefix}, got ${decoded.prefix}`,
    );
  }
  const bytes = bech32.fromWords(decoded.words);
  if (bytes.length !== 20 && bytes.length !== 32) {
    throw sdkErrors.invalidAddress.wrap(`invalid ${what}: address length ${bytes.length} is not 20 or 32`);
  }
  return bytes;
}

export function encodeAddress(bytes: Uint8Array, prefix: string): string {
  return bech32.encode(prefix, bech32.toWords(bytes), 1023);
}

/** Module account address as the SDK derives it: first 20 bytes of sha256(module name). */
export function moduleAddress(name: string, prefix: string): string {
  return encodeAddress(createHash("sha256").update(name).digest().subarray(0, 20), prefix);
}
