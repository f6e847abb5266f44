/**
 * The strict decoders the wire formats share (tenant tokens, the backend contract and its
 * callbacks, manifests, the keyring file): standard base64, hex, and JSON without duplicate
 * keys. Each accepts one spelling of a value and refuses the rest with a typed error, so
 * two readers of one document never see different values.
 */
import { FredError } from "./errors.ts";

// ---- base64 and hex ----

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

// ---- strict JSON ----

/**
 * JSON.parse with two extra refusals: inputs larger than `maxBytes` (checked before
 * parsing) and objects with a repeated key. Go keeps the last duplicate silently; we
 * refuse it, because two readers of one document must never see different values.
 */
export function parseStrictJson(input: string | Uint8Array, maxBytes: number): unknown {
  const size = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (size > maxBytes) throw new FredError("ERR_JSON_TOO_LARGE", `document exceeds ${maxBytes} bytes`);
  const text =
    typeof input === "string"
      ? input
      : Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString("utf8");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FredError("ERR_JSON", `invalid JSON: ${(err as Error).message}`);
  }
  // JSON.parse keeps one property per repeated key, so a document can hold a duplicate only
  // when its text names more keys than the parsed value has. Counting both allocates
  // nothing; only a document whose counts differ gets the exact scan.
  if (keysInText(text) === keysInValue(value)) return value;
  const dup = findDuplicateKey(text);
  if (dup !== undefined)
    throw new FredError("ERR_JSON_DUPLICATE_KEY", `duplicate key ${JSON.stringify(dup)}`);
  return value;
}

/** Object keys in valid JSON text: string tokens followed (after whitespace) by a colon. */
function keysInText(text: string): number {
  let keys = 0;
  for (let open = text.indexOf('"'); open !== -1; ) {
    // The closing quote is the next one not escaped by an odd run of backslashes.
    let close = text.indexOf('"', open + 1);
    for (;;) {
      let slashes = 0;
      while (text.charCodeAt(close - 1 - slashes) === 0x5c /* \ */) slashes++;
      if (slashes % 2 === 0) break;
      close = text.indexOf('"', close + 1);
    }
    let next = close + 1;
    for (let c = text.charCodeAt(next); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; )
      c = text.charCodeAt(++next);
    if (text.charCodeAt(next) === 0x3a /* : */) keys++;
    open = text.indexOf('"', next);
  }
  return keys;
}

/** Own keys of every object in a parsed JSON value. */
function keysInValue(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let keys = 0;
  if (Array.isArray(value)) {
    for (const v of value) keys += keysInValue(v);
    return keys;
  }
  const o = value as Record<string, unknown>;
  for (const k in o) keys += 1 + keysInValue(o[k]);
  return keys;
}

/**
 * Scans text already known to be valid JSON and returns the first key that repeats
 * within one object. Only objects keep a key set; strings are skipped wholesale.
 */
function findDuplicateKey(text: string): string | undefined {
  if (!text.includes("{")) return undefined;
  // One entry per open container: a Set for objects, null for arrays.
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i + 1;
      let hasEscape = false;
      i++;
      while (text.charCodeAt(i) !== 0x22) {
        if (text.charCodeAt(i) === 0x5c /* \ */) {
          hasEscape = true;
          i++;
        }
        i++;
      }
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        const raw = text.slice(start, i);
        const key = hasEscape ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (top.has(key)) return key;
        top.add(key);
        expectKey = false;
      }
    } else if (ch === 0x7b /* { */) {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === 0x5b /* [ */) {
      stack.push(null);
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      stack.pop();
    } else if (ch === 0x2c /* , */) {
      expectKey = stack[stack.length - 1] != null;
    }
  }
  return undefined;
}
