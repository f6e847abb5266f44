import { secp256k1 } from "@noble/curves/secp256k1.js";
import { HDKey } from "@scure/bip32";
import { mnemonicToSeedSync, validateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { decodeHex } from "../core/encoding.ts";
import { FredError } from "../core/errors.ts";

/** Cosmos HD path for account `index` (coin type 118). */
export function cosmosHdPath(index = 0): string {
  return `m/44'/118'/${index}'/0/0`;
}

export function privateKeyFromMnemonic(mnemonic: string, hdPath = cosmosHdPath(0)): Uint8Array {
  const words = mnemonic.trim().split(/\s+/).join(" ");
  if (!validateMnemonic(words, wordlist)) throw new FredError("ERR_MNEMONIC", "invalid BIP-39 mnemonic");
  const key = HDKey.fromMasterSeed(mnemonicToSeedSync(words)).derive(hdPath).privateKey;
  if (!key) throw new FredError("ERR_MNEMONIC", "could not derive a private key");
  return key;
}

export function privateKeyFromHex(hex: string): Uint8Array {
  const key = decodeHex(hex, "private key", 32);
  if (!secp256k1.utils.isValidSecretKey(key))
    throw new FredError("ERR_PRIVATE_KEY", "invalid secp256k1 private key");
  return key;
}

export function compressedPubkey(privateKey: Uint8Array): Uint8Array {
  return secp256k1.getPublicKey(privateKey, true);
}
