/**
 * SIGN_MODE_DIRECT signature checks with OpenSSL (node:crypto) for speed: the signature is
 * r‖s (64 bytes, low-S) over SHA-256 of SignDoc{body_bytes, auth_info_bytes, chain_id,
 * account_number}.
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import { SignDoc } from "cosmjs-types/cosmos/tx/v1beta1/tx";

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = SECP256K1_N >> 1n;
// DER SubjectPublicKeyInfo header for a compressed secp256k1 point (id-ecPublicKey, secp256k1).
const SPKI_PREFIX = Buffer.from("3036301006072a8648ce3d020106052b8104000a032200", "hex");

const keyCache = new Map<string, KeyObject>();

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

export function signBytes(
  bodyBytes: Uint8Array,
  authInfoBytes: Uint8Array,
  chainId: string,
  accountNumber: bigint,
) {
  return SignDoc.encode({ bodyBytes, authInfoBytes, chainId, accountNumber }).finish();
}

/** Returns undefined when valid, otherwise the reason (used inside the SDK's error text). */
export function verifySecp256k1(
  pubKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): string | undefined {
  if (pubKey.length !== 33) return "invalid public key length";
  if (signature.length !== 64) return "unable to verify single signer signature";
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).toString("hex")}`);
  if (s > HALF_N) return "unable to verify single signer signature";
  let ok = false;
  try {
    ok = verify("sha256", message, { key: publicKey(pubKey), dsaEncoding: "ieee-p1363" }, signature);
  } catch {
    ok = false;
  }
  return ok ? undefined : "unable to verify single signer signature";
}
