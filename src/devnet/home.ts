/**
 * The devnet home directory: dev keys in plain files (readable while the node holds its
 * database), the validator key, and the chain database under data/.
 *
 *   <home>/keys.json       genesis facts (chain id, PWR denom, module authority when chosen),
 *                          dev accounts (mnemonics, private keys), provider_uuid, skus
 *   <home>/validator.json  the single validator's ed25519 key
 *   <home>/data/chain.sqlite
 *   <home>/node.lock       pid of the running `fred devnet start`
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { addressFromPubkey } from "../auth/address.ts";
import { compressedPubkey, privateKeyFromMnemonic } from "../auth/keys.ts";
import { parseStrictJson } from "../core/encoding.ts";
import { FredError } from "../core/errors.ts";
import type { Validator } from "./blocks.ts";
import { sha256 } from "./blocks.ts";
import type { KeysInfo } from "./module.ts";

export const DEVNET_CHAIN_ID = "fred-devnet-1";
export const DEVNET_PREFIX = "manifest";
export const DEVNET_DENOM = "umfx";
/** Billing and SKU price denom unless `--pwr-denom` chose another (the chain's is a factory denom). */
export const DEVNET_PWR_DENOM = "upwr";

export interface KeyAccount {
  name: string;
  address: string;
  mnemonic: string;
  private_key_hex: string;
}

export interface KeysFile extends KeysInfo {
  chain_id: string;
  /** Absent in homes made before `--pwr-denom`: those use DEVNET_PWR_DENOM. */
  pwr_denom?: string;
  /** Set by `--authority`; absent means POA_ADMIN_ADDRESS, else the gov module, at each start. */
  authority?: string;
  accounts: KeyAccount[];
}

/** The PWR denom a home's genesis used. */
export function pwrDenomOf(keys: KeysFile): string {
  return keys.pwr_denom ?? DEVNET_PWR_DENOM;
}

export const homePaths = (home: string) => ({
  keys: join(home, "keys.json"),
  validator: join(home, "validator.json"),
  db: join(home, "data", "chain.sqlite"),
  lock: join(home, "node.lock"),
});

function writeFileAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, path);
}

export function newKeyAccount(name: string): KeyAccount {
  return keyAccountFromMnemonic(name, generateMnemonic(wordlist, 256));
}

/** The account of `mnemonic` at m/44'/118'/0'/0/0, as Cosmos wallets derive it. */
export function keyAccountFromMnemonic(name: string, mnemonic: string): KeyAccount {
  const key = privateKeyFromMnemonic(mnemonic);
  return {
    name,
    address: addressFromPubkey(compressedPubkey(key), DEVNET_PREFIX),
    mnemonic,
    private_key_hex: Buffer.from(key).toString("hex"),
  };
}

/** The dev account names for `tenants` tenants, in the pinned order. */
export function devAccountNames(tenants: number): string[] {
  return ["provider", ...Array.from({ length: tenants }, (_, i) => `tenant${i + 1}`), "faucet"];
}

export function readKeys(home: string): KeysFile | undefined {
  const path = homePaths(home).keys;
  if (!existsSync(path)) return undefined;
  const value = parseStrictJson(readFileSync(path), 64 * 1024 * 1024) as KeysFile;
  if (
    !value ||
    !Array.isArray(value.accounts) ||
    typeof value.chain_id !== "string" ||
    (value.pwr_denom !== undefined && typeof value.pwr_denom !== "string") ||
    (value.authority !== undefined && typeof value.authority !== "string")
  ) {
    throw new FredError("ERR_DEVNET_HOME", `${path} is not a devnet keys file`);
  }
  return value;
}

export function writeKeys(home: string, keys: KeysFile): void {
  mkdirSync(home, { recursive: true });
  writeFileAtomic(homePaths(home).keys, `${JSON.stringify(keys, null, 2)}\n`);
}

/** Loads the validator key, creating it on first use. */
export function loadValidator(home: string): Validator {
  const path = homePaths(home).validator;
  if (!existsSync(path)) {
    const { privateKey } = generateKeyPairSync("ed25519");
    const der = privateKey.export({ format: "der", type: "pkcs8" }).toString("base64");
    mkdirSync(home, { recursive: true });
    writeFileAtomic(path, `${JSON.stringify({ type: "ed25519", pkcs8_der_base64: der })}\n`);
  }
  const doc = parseStrictJson(readFileSync(path), 64 * 1024) as { pkcs8_der_base64?: unknown };
  if (typeof doc.pkcs8_der_base64 !== "string")
    throw new FredError("ERR_DEVNET_HOME", `${path} is malformed`);
  const privateKey = createPrivateKey({
    key: Buffer.from(doc.pkcs8_der_base64, "base64"),
    format: "der",
    type: "pkcs8",
  });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  const raw = spki.subarray(spki.length - 32);
  return {
    address: sha256(raw).subarray(0, 20).toString("hex").toUpperCase(),
    pubKeyBase64: raw.toString("base64"),
    privateKey,
  };
}
