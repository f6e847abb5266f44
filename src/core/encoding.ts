import { FredError } from "./errors.ts";

/**
 * Strict standard base64 (RFC 4648 §4: `+/` alphabet, `=` padding required), as Go's
 * StdEncoding expects. URL-safe, unpadded, whitespace-bearing or non-canonical input
 * (non-zero bits before the padding) is refused.
 */
const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function decodeBase64Std(
  text: string,
  what: string,
  maxDecodedBytes = Number.POSITIVE_INFINITY,
): Buffer {
  if (typeof text !== "string") throw new FredError("ERR_BASE64", `${what} must be a base64 string`);
  // Check the size before decoding so an oversized input is never allocated.
  if ((text.length / 4) * 3 > maxDecodedBytes + 2) {
    throw new FredError("ERR_BASE64", `${what} is too large`);
  }
  if (!STD_BASE64.test(text)) throw new FredError("ERR_BASE64", `${what} is not standard padded base64`);
  const bytes = Buffer.from(text, "base64");
  // Unused low bits before the padding must be zero: one byte string, one spelling.
  if (text.endsWith("=") && bytes.toString("base64") !== text) {
    throw new FredError("ERR_BASE64", `${what} is not canonical base64`);
  }
  return bytes;
}

export function encodeBase64Std(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

const HEX = /^[0-9a-fA-F]*$/;

/** Hex of exactly `bytes` bytes (either case). */
export function decodeHex(text: string, what: string, bytes?: number): Buffer {
  if (typeof text !== "string" || text.length % 2 !== 0 || !HEX.test(text)) {
    throw new FredError("ERR_HEX", `${what} must be hex`);
  }
  if (bytes !== undefined && text.length !== bytes * 2) {
    throw new FredError("ERR_HEX", `${what} must be ${bytes} bytes (${bytes * 2} hex characters)`);
  }
  return Buffer.from(text, "hex");
}
