import { BaseAccount } from "cosmjs-types/cosmos/auth/v1beta1/auth";
import { PubKey } from "cosmjs-types/cosmos/crypto/secp256k1/keys";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { moduleAddress } from "../../address.ts";
import type { AppHandle, DevnetModule, ExecContext, KVStore, QueryContext } from "../../module.ts";
import { accountKey, authQueries, MODULE_PERMISSIONS } from "./queries.ts";
import { type AccountInfo, AUTH, type AuthKeeper } from "./types.ts";

export const SECP256K1_PUBKEY_URL = "/cosmos.crypto.secp256k1.PubKey";
export { BASE_ACCOUNT_URL } from "./queries.ts";

const NEXT_NUMBER_KEY = "next_account_number";

function encodeAccount(a: AccountInfo): Uint8Array {
  const pubKey: Any | undefined = a.pubKey
    ? { typeUrl: SECP256K1_PUBKEY_URL, value: PubKey.encode({ key: a.pubKey }).finish() }
    : undefined;
  return BaseAccount.encode({
    address: a.address,
    pubKey,
    accountNumber: a.accountNumber,
    sequence: a.sequence,
  }).finish();
}

function decodeAccount(bytes: Uint8Array): AccountInfo {
  const b = BaseAccount.decode(bytes);
  const info: AccountInfo = { address: b.address, accountNumber: b.accountNumber, sequence: b.sequence };
  if (b.pubKey) info.pubKey = PubKey.decode(b.pubKey.value).key;
  return info;
}

function readAccount(store: KVStore, address: string): AccountInfo | undefined {
  const raw = store.get(accountKey(address));
  return raw === undefined ? undefined : decodeAccount(raw);
}

/** x/auth: account numbers, sequences and public keys; the Account queries cosmjs uses. */
export function authModule(app: AppHandle): DevnetModule {
  const keeper: AuthKeeper = {
    getAccount: (ctx: ExecContext | QueryContext, address) => readAccount(ctx.store(AUTH), address),
    ensureAccount(ctx, address) {
      const store = ctx.store(AUTH);
      const existing = readAccount(store, address);
      if (existing) return existing;
      const raw = store.get(NEXT_NUMBER_KEY);
      const accountNumber = raw === undefined ? 0n : BigInt(new TextDecoder().decode(raw));
      store.set(NEXT_NUMBER_KEY, new TextEncoder().encode((accountNumber + 1n).toString()));
      const account: AccountInfo = { address, accountNumber, sequence: 0n };
      store.set(accountKey(address), encodeAccount(account));
      return account;
    },
    setAccount(ctx, account) {
      ctx.store(AUTH).set(accountKey(account.address), encodeAccount(account));
    },
    moduleAddress: (name) => moduleAddress(name, app.bech32Prefix),
  };

  return {
    name: AUTH,
    keeper,
    initGenesis(ctx) {
      // Module accounts that exist on every SDK chain; the fee collector receives every fee.
      for (const name of Object.keys(MODULE_PERMISSIONS)) {
        keeper.ensureAccount(ctx, moduleAddress(name, app.bech32Prefix));
      }
    },
    queries: authQueries(app.bech32Prefix),
  };
}
