/**
 * ECDSA signature checks on secp256k1: the one place a tenant's signature is verified.
 *
 * libsecp256k1 (Bitcoin Core's library, through the `secp256k1` package's prebuilt addon)
 * checks a signature about five times faster than OpenSSL's generic elliptic-curve code,
 * and a fresh-token tenant request spends most of its CPU here (docs/benchmarks.md). Where
 * no addon loads (a platform without a prebuilt one and no compiler at install), OpenSSL
 * does the same check. Verification involves no secret, so neither needs to be
 * constant-time; both answer alike for any input once S is low: libsecp256k1 refuses a
 * high S, OpenSSL takes it, so callers normalise S first (token.ts's normalizeLowS).
 */
import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto";
import { createRequire } from "node:module";

interface Libsecp256k1 {
  ecdsaVerify(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array): boolean;
}

function loadLibsecp256k1(): Libsecp256k1 | undefined {
  try {
    // The bindings alone: the package's main module falls back to a JavaScript curve
    // (elliptic) when the addon is missing, and OpenSSL is the better fallback.
    return createRequire(import.meta.url)("secp256k1/bindings") as Libsecp256k1;
  } catch {
    return undefined;
  }
}

const libsecp256k1 = loadLibsecp256k1();

/** Which library verifies signatures in this process (logged by providerd at start). */
export const SECP256K1_VERIFIER: "libsecp256k1" | "openssl" = libsecp256k1 ? "libsecp256k1" : "openssl";

// DER SubjectPublicKeyInfo prefix for an id-ecPublicKey on secp256k1 with a 33-byte point.
const SPKI_PREFIX = Buffer.from("3036301006072a8648ce3d020106052b8104000a032200", "hex");

/** A parsed public key: its 33 compressed bytes (libsecp256k1) and OpenSSL's key object. */
export interface Secp256k1PublicKey {
  readonly compressed: Buffer;
  readonly keyObject: KeyObject;
}

/** Parses a 33-byte compressed point; throws when it is not a point on the curve. */
export function parseSecp256k1PublicKey(compressed: Buffer): Secp256k1PublicKey {
  if (compressed.length !== 33) throw new Error("a compressed secp256k1 key is 33 bytes");
  const keyObject = createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, compressed]),
    format: "der",
    type: "spki",
  });
  return { compressed, keyObject };
}

/** OpenSSL's check of a 64-byte r‖s over SHA-256(message). */
export function verifyWithOpenssl(
  message: Uint8Array,
  signature: Uint8Array,
  key: Secp256k1PublicKey,
): boolean {
  try {
    return verify("sha256", message, { key: key.keyObject, dsaEncoding: "ieee-p1363" }, signature);
  } catch {
    return false;
  }
}

/** libsecp256k1's check of the same; undefined where the addon did not load. */
export function verifyWithLibsecp256k1(
  message: Uint8Array,
  signature: Uint8Array,
  key: Secp256k1PublicKey,
): boolean | undefined {
  if (libsecp256k1 === undefined) return undefined;
  const digest = createHash("sha256").update(message).digest();
  try {
    return libsecp256k1.ecdsaVerify(signature, digest, key.compressed);
  } catch {
    // An r or s not below the curve order does not even parse: not a valid signature.
    return false;
  }
}

/** Whether `signature` (64 bytes r‖s, low S) signs SHA-256(message) under `key`. */
export function verifySecp256k1(
  message: Uint8Array,
  signature: Uint8Array,
  key: Secp256k1PublicKey,
): boolean {
  return verifyWithLibsecp256k1(message, signature, key) ?? verifyWithOpenssl(message, signature, key);
}
