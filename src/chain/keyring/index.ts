export { DEFAULT_SCRYPT, type ScryptParams } from "./crypto.ts";
export { KEY_FORMAT } from "./format.ts";
export {
  checkKeyName,
  type KeyInfo,
  Keyring,
  type KeyringBackend,
  type KeyringOptions,
  MIN_PASSPHRASE_LENGTH,
  parseKeyringBackend,
  type UnlockedKey,
} from "./keyring.ts";
