/**
 * SIGN_MODE_DIRECT signature checks with OpenSSL (node:crypto): the signature is r‖s
 * (64 bytes, low-S) over SHA-256 of SignDoc{body_bytes, auth_info_bytes, chain_id,
 * account_number}.
 *
 * secp256k1 verification is the most expensive step of a tx, so results are remembered:
 * broadcast pre-verifies in libuv's thread pool (off the main thread, in parallel), and
 * CheckTx and delivery then find the same (key, message, signature) already checked.
 */
import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto";
import { bech32 } from "@scure/base";
import { SignDoc } from "cosmjs-types/cosmos/tx/v1beta1/tx";

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = SECP256K1_N >> 1n;
// DER SubjectPublicKeyInfo header for a compressed secp256k1 point (id-ecPublicKey, secp256k1).
const SPKI_PREFIX = Buffer.from("3036301006072a8648ce3d020106052b8104000a032200", "hex");
const FAILED = "unable to verify single signer signature";
const CACHE_LIMIT = 200_000;

const keyCache = new Map<string, KeyObject>();
const addressCache = new Map<string, string>();
const verified = new Set<string>();

function publicKey(compressed: Uint8Array): KeyObject {
  const id = Buffer.from(compressed).toString("hex");
  let key = keyCache.get(id);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, compressed]), format: "der", type: "spki" });
    if (keyCache.size > 10_000) keyCache.clear();
    keyCache.set(id, key);
  }
  return key;
}

/** bech32(prefix, RIPEMD160(SHA256(pubkey))) with OpenSSL hashes, memoised per key. */
export function addressOfPubkey(compressed: Uint8Array, prefix: string): string {
  const id = `${prefix}/${Buffer.from(compressed).toString("hex")}`;
  let address = addressCache.get(id);
  if (!address) {
    const sha = createHash("sha256").update(compressed).digest();
    const rip = createHash("ripemd160").update(sha).digest();
    address = bech32.encode(prefix, bech32.toWords(rip));
    if (addressCache.size > 10_000) addressCache.clear();
    addressCache.set(id, address);
  }
  return address;
}

export function signBytes(
  bodyBytes: Uint8Array,
  authInfoBytes: Uint8Array,
  chainId: string,
  accountNumber: bigint,
) {
  return SignDoc.encode({ bodyBytes, authInfoBytes, chainId, accountNumber }).finish();
}

function cacheKey(pubKey: Uint8Array, message: Uint8Array, signature: Uint8Array): string {
  return createHash("sha256").update(pubKey).update(message).update(signature).digest("base64");
}

function remember(id: string): void {
  if (verified.size >= CACHE_LIMIT) verified.clear();
  verified.add(id);
}

function shapeError(pubKey: Uint8Array, signature: Uint8Array): string | undefined {
  if (pubKey.length !== 33) return "invalid public key length";
  if (signature.length !== 64) return FAILED;
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).toString("hex")}`);
  if (s > HALF_N) return FAILED;
  return undefined;
}

/** Returns undefined when valid, otherwise the reason (used inside the SDK's error text). */
export function verifySecp256k1(
  pubKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): string | undefined {
  const bad = shapeError(pubKey, signature);
  if (bad) return bad;
  const id = cacheKey(pubKey, message, signature);
  if (verified.has(id)) return undefined;
  let ok = false;
  try {
    ok = verify("sha256", message, { key: publicKey(pubKey), dsaEncoding: "ieee-p1363" }, signature);
  } catch {
    ok = false;
  }
  if (!ok) return FAILED;
  remember(id);
  return undefined;
}

/** Verifies in the thread pool and remembers a success; never rejects. */
export function preverifySecp256k1(
  pubKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): Promise<void> {
  if (shapeError(pubKey, signature)) return Promise.resolve();
  const id = cacheKey(pubKey, message, signature);
  if (verified.has(id)) return Promise.resolve();
  return new Promise((resolve) => {
    try {
      verify(
        "sha256",
        message,
        { key: publicKey(pubKey), dsaEncoding: "ieee-p1363" },
        signature,
        (err, ok) => {
          if (!err && ok) remember(id);
          resolve();
        },
      );
    } catch {
      resolve();
    }
  });
}
