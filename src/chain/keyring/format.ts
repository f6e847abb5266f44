/**
 * The on-disk key file format (ours; documented in docs/keyring.md). One JSON file per key,
 * `<keyring_dir>/keyring-<backend>/<name>.json`, mode 0600, directory 0700.
 *
 *   test: {"format":"fred-key/1","backend":"test","name","address","pubkey",
 *          "secret":{"private_key_hex","mnemonic"?}}
 *   file: {"format":"fred-key/1","backend":"file","name","address","pubkey",
 *          "kdf":{"name":"scrypt","n","r","p","salt"},"cipher":{"name":"aes-256-gcm","iv","tag"},
 *          "ciphertext"}
 *
 * `pubkey` is the base64 33-byte compressed secp256k1 key. In the file backend the secret
 * JSON is encrypted with AES-256-GCM under a scrypt-derived key, and the public header
 * (format, backend, name, address, pubkey) is bound in as additional authenticated data so
 * an edited header fails to decrypt instead of pointing the key at someone else's address.
 */
import { z } from "zod";

export const KEY_FORMAT = "fred-key/1";
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);

export const SecretSchema = z.strictObject({
  private_key_hex: z.string().regex(/^[0-9a-f]{64}$/),
  mnemonic: z.string().optional(),
});
export type KeySecret = z.infer<typeof SecretSchema>;

const header = {
  format: z.literal(KEY_FORMAT),
  name: z.string().regex(KEY_NAME),
  address: z.string().min(1),
  pubkey: base64,
};

export const TestKeyFileSchema = z.strictObject({
  ...header,
  backend: z.literal("test"),
  secret: SecretSchema,
});

export const FileKeyFileSchema = z.strictObject({
  ...header,
  backend: z.literal("file"),
  kdf: z.strictObject({
    name: z.literal("scrypt"),
    n: z
      .number()
      .int()
      .min(1024)
      .max(1 << 20),
    r: z.number().int().min(1).max(32),
    p: z.number().int().min(1).max(16),
    salt: base64,
  }),
  cipher: z.strictObject({ name: z.literal("aes-256-gcm"), iv: base64, tag: base64 }),
  ciphertext: base64,
});

export const KeyFileSchema = z.discriminatedUnion("backend", [TestKeyFileSchema, FileKeyFileSchema]);
export type KeyFile = z.infer<typeof KeyFileSchema>;

/** The authenticated header bytes of an encrypted key file. */
export function headerAad(file: Pick<KeyFile, "format" | "backend" | "name" | "address" | "pubkey">): Buffer {
  return Buffer.from(JSON.stringify([file.format, file.backend, file.name, file.address, file.pubkey]));
}
