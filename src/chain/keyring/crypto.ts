/**
 * Passphrase encryption for the `file` keyring backend: scrypt (node:crypto) derives a
 * 256-bit key, AES-256-GCM encrypts the secret with the key file's header as AAD.
 */
import { createCipheriv, createDecipheriv, randomBytes, scrypt } from "node:crypto";
import { FredError } from "../../core/errors.ts";

export interface ScryptParams {
  n: number;
  r: number;
  p: number;
}

/** ~32 MiB and a few hundred ms per derivation: slow for guessing, fine for a daemon start. */
export const DEFAULT_SCRYPT: ScryptParams = { n: 1 << 15, r: 8, p: 1 };

function deriveKey(passphrase: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const maxmem = 256 * params.n * params.r + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(passphrase, salt, 32, { N: params.n, r: params.r, p: params.p, maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

export interface Sealed {
  salt: Buffer;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

export async function seal(
  plaintext: Buffer,
  passphrase: string,
  aad: Buffer,
  params: ScryptParams,
): Promise<Sealed> {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const key = await deriveKey(passphrase, salt, params);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { salt, iv, tag: cipher.getAuthTag(), ciphertext };
}

export async function open(
  sealed: Sealed,
  passphrase: string,
  aad: Buffer,
  params: ScryptParams,
): Promise<Buffer> {
  const key = await deriveKey(passphrase, sealed.salt, params);
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, sealed.iv);
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
  } catch {
    // GCM cannot tell a wrong passphrase from a tampered file; say both.
    throw new FredError("ERR_KEYRING_PASSPHRASE", "wrong passphrase or corrupted key file");
  }
}
