// Tenant bearer tokens: what the tenant signs (the ADR-036 sign doc), minting and verifying.
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { LRUCache } from "lru-cache";
import { decodeBase64Std, decodeHex, encodeBase64Std, parseStrictJson } from "../core/encoding.ts";
import { FredError } from "../core/errors.ts";
import { addressFromPubkey, DEFAULT_BECH32_PREFIX } from "./address.ts";
import { compressedPubkey } from "./keys.ts";
import { parseSecp256k1PublicKey, type Secp256k1PublicKey, verifySecp256k1 } from "./secp256k1.ts";

/**
 * Tenant bearer tokens: base64(JSON envelope) signed with ADR-036 by the tenant's
 * account key. Two kinds share the envelope: the access token for the lease API, and
 * the payload-upload token that additionally binds the manifest's SHA-256 (`meta_hash`).
 */
export type TokenKind = "access" | "payload";

export const TOKEN_MAX_AGE_SECONDS = 30;
export const TOKEN_MAX_FUTURE_SKEW_SECONDS = 10;
/** Far larger than any honest token (~400 characters); refused before decoding. */
export const TOKEN_MAX_CHARS = 4096;

export type TokenErrorCode =
  | "ERR_TOKEN_MALFORMED"
  | "ERR_TOKEN_EXPIRED"
  | "ERR_TOKEN_FROM_FUTURE"
  | "ERR_TOKEN_BAD_PUBKEY"
  | "ERR_TOKEN_BAD_SIGNATURE"
  | "ERR_TOKEN_TENANT_MISMATCH"
  | "ERR_TOKEN_LEASE_MISMATCH";

export class TokenError extends FredError {
  declare readonly code: TokenErrorCode;
  constructor(code: TokenErrorCode, message: string) {
    super(code, message);
    this.name = "TokenError";
  }
}

export interface TokenClaims {
  kind: TokenKind;
  tenant: string;
  leaseUuid: string;
  /** Unix seconds. */
  timestamp: number;
  /** The meta_hash text exactly as signed (payload tokens only). */
  metaHash?: string;
  /** base64 of the low-S signature: the key for replay protection. */
  replayKey: string;
}

export interface VerifyTokenOptions {
  nowMs: number;
  prefix?: string;
  /** When set, the token's lease must equal it exactly. */
  leaseUuid?: string;
}

/** The message the tenant signs, per token kind. */
export function tokenSignData(
  kind: TokenKind,
  tenant: string,
  leaseUuid: string,
  timestamp: number,
  metaHash = "",
) {
  return kind === "access"
    ? `${tenant}:${leaseUuid}:${timestamp}`
    : `manifest lease data ${leaseUuid} ${metaHash} ${timestamp}`;
}

/**
 * ADR-036 "sign arbitrary data": the data is wrapped in a legacy amino StdSignDoc with
 * fixed empty chain id, fee, memo and zero numbers. The bytes below are the compact JSON
 * with keys in sorted order, exactly what Keplr and cosmjs sign.
 */
export function adr036SignDoc(signer: string, data: Uint8Array | string): string {
  const b64 = Buffer.from(typeof data === "string" ? Buffer.from(data, "utf8") : data).toString("base64");
  // signer is bech32 and data is base64: neither needs JSON escaping beyond quotes.
  return (
    '{"account_number":"0","chain_id":"","fee":{"amount":[],"gas":"0"},"memo":"",' +
    `"msgs":[{"type":"sign/MsgSignData","value":{"data":"${b64}","signer":${JSON.stringify(signer)}}}],"sequence":"0"}`
  );
}

export interface MintTokenInput {
  privateKey: Uint8Array;
  leaseUuid: string;
  /** Unix seconds. */
  timestamp: number;
  prefix?: string;
  /** 64 hex characters: makes a payload-upload token. */
  metaHash?: string;
}

export function mintTenantToken(input: MintTokenInput): string {
  const pub = compressedPubkey(input.privateKey);
  const tenant = addressFromPubkey(pub, input.prefix ?? DEFAULT_BECH32_PREFIX);
  if (input.metaHash !== undefined) decodeHex(input.metaHash, "meta_hash", 32);
  const kind: TokenKind = input.metaHash === undefined ? "access" : "payload";
  const data = tokenSignData(kind, tenant, input.leaseUuid, input.timestamp, input.metaHash);
  // noble hashes the message with SHA-256 (prehash) and returns 64-byte low-S r‖s.
  const signature = secp256k1.sign(Buffer.from(adr036SignDoc(tenant, data)), input.privateKey);
  const envelope: Record<string, unknown> = {
    tenant,
    lease_uuid: input.leaseUuid,
    timestamp: input.timestamp,
    pub_key: encodeBase64Std(pub),
    signature: encodeBase64Std(signature),
  };
  if (input.metaHash !== undefined) envelope.meta_hash = input.metaHash;
  return Buffer.from(JSON.stringify(envelope)).toString("base64");
}

const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_ORDER = CURVE_ORDER >> 1n;
interface CachedKey {
  key: Secp256k1PublicKey;
  addresses: Map<string, string>;
}

/** Parsed public keys by their base64 text: tenants reuse one key across many requests. */
const keyCache = new LRUCache<string, CachedKey>({ max: 4096 });

function parsePubkey(b64: string): CachedKey {
  const hit = keyCache.get(b64);
  if (hit) return hit;
  let raw: Buffer;
  try {
    raw = decodeBase64Std(b64, "pub_key", 64);
  } catch {
    throw new TokenError("ERR_TOKEN_BAD_PUBKEY", "pub_key is not standard base64");
  }
  if (raw.length !== 33)
    throw new TokenError("ERR_TOKEN_BAD_PUBKEY", "pub_key must be a 33-byte compressed key");
  let key: Secp256k1PublicKey;
  try {
    key = parseSecp256k1PublicKey(raw);
  } catch {
    throw new TokenError("ERR_TOKEN_BAD_PUBKEY", "pub_key is not a point on secp256k1");
  }
  const entry = { key, addresses: new Map<string, string>() };
  keyCache.set(b64, entry);
  return entry;
}

function addressOf(entry: CachedKey, pubB64: string, prefix: string): string {
  let address = entry.addresses.get(prefix);
  if (address === undefined) {
    address = addressFromPubkey(Buffer.from(pubB64, "base64"), prefix);
    entry.addresses.set(prefix, address);
  }
  return address;
}

/** Replaces a high S with n − S, so both encodings of one signature verify alike. */
export function normalizeLowS(sig: Uint8Array): Buffer {
  const out = Buffer.from(sig);
  const s = BigInt(`0x${out.subarray(32).toString("hex")}`);
  if (s > HALF_ORDER && s < CURVE_ORDER)
    out.write((CURVE_ORDER - s).toString(16).padStart(64, "0"), 32, "hex");
  return out;
}

function requireString(obj: Record<string, unknown>, field: string): string {
  const v = obj[field];
  if (typeof v !== "string" || v === "") throw new TokenError("ERR_TOKEN_MALFORMED", `${field} is required`);
  return v;
}

const malformed = (message: string) => new TokenError("ERR_TOKEN_MALFORMED", message);

/**
 * Tokens whose signature verified, by their exact text. The ECDSA check is most of a
 * request's cost, and its answer for given bytes never changes: a client polling with one
 * token (valid for TOKEN_MAX_AGE_SECONDS) pays for it once. Only what depends on the time
 * (expiry, future skew) and on the caller (the lease) is checked again on every use; a
 * token that failed is never remembered. Bounded: a flood of distinct valid tokens only
 * evicts, and costs what it would without the cache.
 */
const verifiedTokens = new LRUCache<string, { prefix: string; claims: Readonly<TokenClaims> }>({ max: 2048 });

function checkTimestamp(timestamp: number, nowMs: number): void {
  const ageMs = nowMs - timestamp * 1000;
  if (ageMs > TOKEN_MAX_AGE_SECONDS * 1000) throw new TokenError("ERR_TOKEN_EXPIRED", "token has expired");
  if (-ageMs > TOKEN_MAX_FUTURE_SKEW_SECONDS * 1000) {
    throw new TokenError("ERR_TOKEN_FROM_FUTURE", "token timestamp is in the future");
  }
}

function checkLease(claims: Readonly<TokenClaims>, opts: VerifyTokenOptions): Readonly<TokenClaims> {
  if (opts.leaseUuid !== undefined && opts.leaseUuid !== claims.leaseUuid) {
    throw new TokenError("ERR_TOKEN_LEASE_MISMATCH", "token is for another lease");
  }
  return claims;
}

/** Verifies a tenant token and returns its claims; every failure is a TokenError. */
export function verifyTenantToken(token: string, opts: VerifyTokenOptions): Readonly<TokenClaims> {
  if (token.length > TOKEN_MAX_CHARS) throw malformed("token is too long");
  const prefix = opts.prefix ?? DEFAULT_BECH32_PREFIX;
  const known = verifiedTokens.get(token);
  if (known !== undefined && known.prefix === prefix) {
    checkTimestamp(known.claims.timestamp, opts.nowMs);
    return checkLease(known.claims, opts);
  }
  const claims = verifySignedToken(token, opts.nowMs, prefix);
  verifiedTokens.set(token, { prefix, claims });
  return checkLease(claims, opts);
}

/**
 * As verifyTenantToken, but always the full check (decoding, time, key, tenant and
 * signature) and nothing remembered: for one-shot checks and for measuring that check.
 */
export function verifyTenantTokenUncached(token: string, opts: VerifyTokenOptions): Readonly<TokenClaims> {
  if (token.length > TOKEN_MAX_CHARS) throw malformed("token is too long");
  return checkLease(verifySignedToken(token, opts.nowMs, opts.prefix ?? DEFAULT_BECH32_PREFIX), opts);
}

function verifySignedToken(token: string, nowMs: number, prefix: string): Readonly<TokenClaims> {
  let json: Buffer;
  try {
    json = decodeBase64Std(token, "token");
  } catch {
    throw malformed("token is not standard base64");
  }
  let envelope: unknown;
  try {
    envelope = parseStrictJson(json, TOKEN_MAX_CHARS);
  } catch (err) {
    throw malformed(`token is not a JSON envelope: ${(err as Error).message}`);
  }
  if (typeof envelope !== "object" || envelope === null || Array.isArray(envelope)) {
    throw malformed("token is not a JSON object");
  }
  const fields = envelope as Record<string, unknown>;
  const leaseUuid = requireString(fields, "lease_uuid");
  let metaHash: string | undefined;
  if (fields.meta_hash !== undefined) {
    if (typeof fields.meta_hash !== "string" || !/^[0-9a-fA-F]{64}$/.test(fields.meta_hash)) {
      throw malformed("meta_hash must be 64 hex characters");
    }
    metaHash = fields.meta_hash;
  }
  const tenant = requireString(fields, "tenant");
  const timestamp = fields.timestamp;
  if (typeof timestamp !== "number" || !Number.isSafeInteger(timestamp)) {
    throw malformed("timestamp must be an integer of Unix seconds");
  }
  checkTimestamp(timestamp, nowMs);
  const pubB64 = requireString(fields, "pub_key");
  const sigB64 = requireString(fields, "signature");
  const key = parsePubkey(pubB64);
  let rawSig: Buffer;
  try {
    rawSig = decodeBase64Std(sigB64, "signature", 128);
  } catch {
    throw new TokenError("ERR_TOKEN_BAD_SIGNATURE", "signature is not standard base64");
  }
  if (rawSig.length !== 64) throw new TokenError("ERR_TOKEN_BAD_SIGNATURE", "signature must be 64 bytes");
  const sig = normalizeLowS(rawSig);
  // The address check is a cache hit for known keys, so it runs before the costly verify.
  if (addressOf(key, pubB64, prefix) !== tenant) {
    throw new TokenError("ERR_TOKEN_TENANT_MISMATCH", "pub_key does not belong to tenant");
  }
  const kind: TokenKind = metaHash === undefined ? "access" : "payload";
  const doc = adr036SignDoc(tenant, tokenSignData(kind, tenant, leaseUuid, timestamp, metaHash));
  if (!verifySecp256k1(Buffer.from(doc), sig, key.key))
    throw new TokenError("ERR_TOKEN_BAD_SIGNATURE", "signature does not verify");
  const claims: TokenClaims = { kind, tenant, leaseUuid, timestamp, replayKey: sig.toString("base64") };
  if (metaHash !== undefined) claims.metaHash = metaHash;
  return Object.freeze(claims);
}
