/**
 * The provider's keyring: named secp256k1 keys in our own file format (format.ts).
 * Backends: `test` (plaintext, development only), `file` (scrypt + AES-256-GCM under a
 * passphrase, FRED_KEYRING_PASSPHRASE at the composition root). `os` is refused: there is
 * no portable OS secret store we could rely on in a headless daemon.
 */
import { randomBytes } from "node:crypto";
import { chmod, link, mkdir, open as openFile, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { addressFromPubkey, DEFAULT_BECH32_PREFIX } from "../../auth/address.ts";
import { compressedPubkey, privateKeyFromMnemonic } from "../../auth/keys.ts";
import { parseStrictJson } from "../../core/encoding.ts";
import { FredError } from "../../core/errors.ts";
import { DEFAULT_SCRYPT, open, type ScryptParams, seal } from "./crypto.ts";
import {
  headerAad,
  KEY_FORMAT,
  KEY_NAME,
  type KeyFile,
  KeyFileSchema,
  type KeySecret,
  SecretSchema,
} from "./format.ts";

export type KeyringBackend = "test" | "file";

export interface KeyInfo {
  name: string;
  address: string;
  /** 33-byte compressed secp256k1 public key. */
  pubkey: Uint8Array;
}

export interface UnlockedKey extends KeyInfo {
  privateKey: Uint8Array;
  mnemonic: string | undefined;
}

export interface KeyringOptions {
  dir: string;
  backend: string;
  /** Required for the `file` backend (add and unlock). */
  passphrase?: string | undefined;
  prefix?: string;
  /** Test seam: cheaper scrypt parameters. */
  scrypt?: ScryptParams;
}

export const MIN_PASSPHRASE_LENGTH = 8;
const MAX_KEY_FILE_BYTES = 64 * 1024;

export function parseKeyringBackend(value: string): KeyringBackend {
  if (value === "test" || value === "file") return value;
  if (value === "os")
    throw new FredError(
      "ERR_KEYRING_BACKEND",
      'keyring backend "os" is not supported: use "file" (encrypted, passphrase in FRED_KEYRING_PASSPHRASE) or "test" (plaintext, development only)',
    );
  throw new FredError(
    "ERR_KEYRING_BACKEND",
    `unknown keyring backend ${JSON.stringify(value)} (use file or test)`,
  );
}

export function checkKeyName(name: string): void {
  if (!KEY_NAME.test(name))
    throw new FredError(
      "ERR_KEY_NAME",
      "key name must be 1-64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
}

export class Keyring {
  readonly backend: KeyringBackend;
  readonly #root: string;
  readonly #passphrase: string | undefined;
  readonly #prefix: string;
  readonly #scrypt: ScryptParams;

  constructor(opts: KeyringOptions) {
    this.backend = parseKeyringBackend(opts.backend);
    this.#root = join(opts.dir, `keyring-${this.backend}`);
    this.#passphrase = opts.passphrase;
    this.#prefix = opts.prefix ?? DEFAULT_BECH32_PREFIX;
    this.#scrypt = opts.scrypt ?? DEFAULT_SCRYPT;
  }

  #path(name: string): string {
    checkKeyName(name);
    return join(this.#root, `${name}.json`);
  }

  #needPassphrase(minLength: number): string {
    const pass = this.#passphrase;
    if (pass === undefined || pass === "")
      throw new FredError("ERR_KEYRING_PASSPHRASE", "the file keyring needs FRED_KEYRING_PASSPHRASE");
    if (pass.length < minLength)
      throw new FredError(
        "ERR_KEYRING_PASSPHRASE",
        `FRED_KEYRING_PASSPHRASE must be at least ${MIN_PASSPHRASE_LENGTH} characters`,
      );
    return pass;
  }

  /**
   * Stores a key recovered from `mnemonic`, or from a freshly generated 24-word mnemonic
   * (returned so the caller can show it once). Refuses to overwrite an existing name.
   */
  async add(
    name: string,
    mnemonic?: string,
  ): Promise<{ info: KeyInfo; mnemonic: string; generated: boolean }> {
    const path = this.#path(name);
    const pass = this.backend === "file" ? this.#needPassphrase(MIN_PASSPHRASE_LENGTH) : undefined;
    const generated = mnemonic === undefined;
    const words = generated ? generateMnemonic(wordlist, 256) : mnemonic.trim().split(/\s+/).join(" ");
    const privateKey = privateKeyFromMnemonic(words);
    const pubkey = compressedPubkey(privateKey);
    const info: KeyInfo = { name, address: addressFromPubkey(pubkey, this.#prefix), pubkey };
    const secret: KeySecret = { private_key_hex: Buffer.from(privateKey).toString("hex"), mnemonic: words };
    const head = {
      format: KEY_FORMAT,
      name,
      address: info.address,
      pubkey: Buffer.from(pubkey).toString("base64"),
    } as const;
    let file: KeyFile;
    if (pass === undefined) {
      file = { ...head, backend: "test", secret };
    } else {
      const aad = headerAad({ ...head, backend: "file" });
      const sealed = await seal(Buffer.from(JSON.stringify(secret)), pass, aad, this.#scrypt);
      file = {
        ...head,
        backend: "file",
        kdf: { name: "scrypt", ...this.#scrypt, salt: sealed.salt.toString("base64") },
        cipher: { name: "aes-256-gcm", iv: sealed.iv.toString("base64"), tag: sealed.tag.toString("base64") },
        ciphertext: sealed.ciphertext.toString("base64"),
      };
    }
    await writeNewFile(this.#root, path, `${JSON.stringify(file, null, 2)}\n`);
    return { info, mnemonic: words, generated };
  }

  async #read(name: string): Promise<KeyFile> {
    const path = this.#path(name);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT")
        throw new FredError(
          "ERR_KEY_NOT_FOUND",
          `no key named ${JSON.stringify(name)} in the ${this.backend} keyring`,
        );
      throw err;
    }
    let parsed: KeyFile;
    try {
      parsed = KeyFileSchema.parse(parseStrictJson(text, MAX_KEY_FILE_BYTES));
    } catch (err) {
      throw new FredError("ERR_KEY_FILE", `key file ${path} is not a valid ${KEY_FORMAT} file`, {
        cause: err,
      });
    }
    if (parsed.name !== name || parsed.backend !== this.backend)
      throw new FredError("ERR_KEY_FILE", `key file ${path} belongs to another name or backend`);
    return parsed;
  }

  async show(name: string): Promise<KeyInfo> {
    const file = await this.#read(name);
    return { name: file.name, address: file.address, pubkey: Buffer.from(file.pubkey, "base64") };
  }

  async list(): Promise<KeyInfo[]> {
    let names: string[];
    try {
      names = await readdir(this.#root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    const out: KeyInfo[] = [];
    for (const entry of names.sort()) {
      if (!entry.endsWith(".json")) continue;
      const name = entry.slice(0, -".json".length);
      if (!KEY_NAME.test(name)) continue;
      out.push(await this.show(name));
    }
    return out;
  }

  /** Loads the private key; checks it still matches the stored address and pubkey. */
  async unlock(name: string): Promise<UnlockedKey> {
    const file = await this.#read(name);
    let secret: KeySecret;
    if (file.backend === "test") {
      secret = file.secret;
    } else {
      const pass = this.#needPassphrase(1);
      const plain = await open(
        {
          salt: Buffer.from(file.kdf.salt, "base64"),
          iv: Buffer.from(file.cipher.iv, "base64"),
          tag: Buffer.from(file.cipher.tag, "base64"),
          ciphertext: Buffer.from(file.ciphertext, "base64"),
        },
        pass,
        headerAad(file),
        { n: file.kdf.n, r: file.kdf.r, p: file.kdf.p },
      );
      secret = SecretSchema.parse(JSON.parse(plain.toString("utf8")));
    }
    const privateKey = Buffer.from(secret.private_key_hex, "hex");
    const pubkey = compressedPubkey(privateKey);
    if (
      Buffer.from(pubkey).toString("base64") !== file.pubkey ||
      addressFromPubkey(pubkey, this.#prefix) !== file.address
    )
      throw new FredError("ERR_KEY_FILE", `key file for ${JSON.stringify(name)} does not match its address`);
    return { name, address: file.address, pubkey, privateKey, mnemonic: secret.mnemonic };
  }
}

/**
 * Writes `path` only if it does not exist: the content goes to a 0600 temp file first and
 * is then hard-linked into place, which fails atomically with EEXIST when the name is taken.
 * A crash never leaves a half-written key under the real name.
 */
async function writeNewFile(dir: string, path: string, contents: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await openFile(tmp, "wx", 0o600);
    try {
      await handle.writeFile(contents, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST")
      throw new FredError("ERR_KEY_EXISTS", `a key with this name already exists: ${path}`);
    throw err;
  } finally {
    await rm(tmp, { force: true });
  }
}
