import { createHmac, hash, timingSafeEqual } from "node:crypto";
import { FredError } from "../core/errors.ts";

/**
 * `X-Fred-Signature: t=<unix>,sha256=<hex>` between providerd and backends. The MAC
 * covers "<t>\n<METHOD>\n<request URI incl. query>\n<hex sha256(body)>", so a request
 * cannot be replayed against another method, path or query, and only inside its window.
 */
/** The header is the backend contract's; re-exported for the callback ingress. */
export { SIGNATURE_HEADER } from "../core/backend-contract/index.ts";
export const MIN_SECRET_BYTES = 32;
export const HMAC_MAX_AGE_MS = 5 * 60_000;
export const HMAC_MAX_FUTURE_SKEW_MS = 60_000;
const EMPTY_BODY_SHA256 = hash("sha256", "", "hex");

export type HmacErrorCode =
  | "ERR_HMAC_MISSING"
  | "ERR_HMAC_MALFORMED"
  | "ERR_HMAC_STALE"
  | "ERR_HMAC_FUTURE"
  | "ERR_HMAC_MISMATCH"
  | "ERR_HMAC_WEAK_SECRET";

export class HmacError extends FredError {
  declare readonly code: HmacErrorCode;
  constructor(code: HmacErrorCode, message: string) {
    super(code, message);
    this.name = "HmacError";
  }
}

/** The one rule for a configured HMAC secret: at least MIN_SECRET_BYTES bytes of UTF-8. */
export function isStrongSecret(secret: string): boolean {
  return Buffer.byteLength(secret, "utf8") >= MIN_SECRET_BYTES;
}

/** Refuses secrets shorter than 32 bytes and returns the secret's bytes. */
export function hmacSecret(secret: string | Uint8Array): Buffer {
  const bytes = typeof secret === "string" ? Buffer.from(secret, "utf8") : Buffer.from(secret);
  if (bytes.length < MIN_SECRET_BYTES) {
    throw new HmacError("ERR_HMAC_WEAK_SECRET", `HMAC secret must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  return bytes;
}

/** The body's sha256 in one call (no Hash object): it runs for every signed request and callback. */
function bodyHash(body: Uint8Array | string | undefined): string {
  if (body === undefined || body.length === 0) return EMPTY_BODY_SHA256;
  return hash("sha256", body, "hex");
}

function mac(secret: Buffer, t: number, method: string, uri: string, bodySha256: string) {
  return createHmac("sha256", secret).update(`${t}\n${method}\n${uri}\n${bodySha256}`).digest();
}

export interface SignInput {
  method: string;
  /** Request target as sent: path plus `?query` when present. */
  uri: string;
  body?: Uint8Array | string;
  /** Unix seconds. */
  timestamp: number;
}

export function signRequest(secret: Buffer, input: SignInput): string {
  const digest = mac(secret, input.timestamp, input.method, input.uri, bodyHash(input.body)).toString("hex");
  return `t=${input.timestamp},sha256=${digest}`;
}

export interface VerifyInput {
  header: string | undefined;
  method: string;
  uri: string;
  body?: Uint8Array | string;
  nowMs: number;
  /** Current key first; a previous key accepted during rotation may follow. */
  secrets: readonly Buffer[];
  /** Prepended to `uri` when a proxy stripped it before us (e.g. "/fred"). */
  canonicalPathPrefix?: string;
  maxAgeMs?: number;
  maxFutureSkewMs?: number;
}

const DECIMAL = /^-?\d{1,19}$/;
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;

export function parseSignatureHeader(header: string): { timestamp: number; digest: Buffer } {
  const comma = header.indexOf(",");
  if (comma < 0) throw new HmacError("ERR_HMAC_MALFORMED", "signature header must be t=<unix>,sha256=<hex>");
  const first = header.slice(0, comma).trim();
  const second = header.slice(comma + 1).trim();
  if (!first.startsWith("t=") || !second.startsWith("sha256=")) {
    throw new HmacError("ERR_HMAC_MALFORMED", "signature header must be t=<unix>,sha256=<hex>");
  }
  const t = first.slice(2);
  const hex = second.slice(7);
  if (!DECIMAL.test(t) || !Number.isSafeInteger(Number(t))) {
    throw new HmacError("ERR_HMAC_MALFORMED", "signature timestamp is not an integer");
  }
  if (!HEX_DIGEST.test(hex))
    throw new HmacError("ERR_HMAC_MALFORMED", "signature digest is not 64 hex characters");
  return { timestamp: Number(t), digest: Buffer.from(hex, "hex") };
}

/** Returns the index of the secret that matched (0 = current); throws HmacError otherwise. */
export function verifyRequest(input: VerifyInput): number {
  if (input.header === undefined || input.header === "")
    throw new HmacError("ERR_HMAC_MISSING", "missing signature");
  const { timestamp, digest } = parseSignatureHeader(input.header);
  const ageMs = input.nowMs - timestamp * 1000;
  if (ageMs > (input.maxAgeMs ?? HMAC_MAX_AGE_MS))
    throw new HmacError("ERR_HMAC_STALE", "signature is too old");
  if (-ageMs > (input.maxFutureSkewMs ?? HMAC_MAX_FUTURE_SKEW_MS)) {
    throw new HmacError("ERR_HMAC_FUTURE", "signature timestamp is in the future");
  }
  const uri = (input.canonicalPathPrefix ?? "") + input.uri;
  const bodySha256 = bodyHash(input.body);
  for (let i = 0; i < input.secrets.length; i++) {
    const expected = mac(input.secrets[i] as Buffer, timestamp, input.method, uri, bodySha256);
    if (timingSafeEqual(expected, digest)) return i;
  }
  throw new HmacError("ERR_HMAC_MISMATCH", "invalid signature");
}
