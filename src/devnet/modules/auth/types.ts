import type { ExecContext, QueryContext } from "../../module.ts";

/** Keeper name to pass to `app.keeper<AuthKeeper>(AUTH)`. */
export const AUTH = "auth";

export interface AccountInfo {
  address: string;
  accountNumber: bigint;
  sequence: bigint;
  /** Compressed secp256k1 key (33 bytes), set by the account's first signed tx. */
  pubKey?: Uint8Array;
}

export interface AuthKeeper {
  getAccount(ctx: ExecContext | QueryContext, address: string): AccountInfo | undefined;
  /** Returns the account, creating it with the next account number when it does not exist. */
  ensureAccount(ctx: ExecContext, address: string): AccountInfo;
  setAccount(ctx: ExecContext, account: AccountInfo): void;
  /** Address of a module account: first 20 bytes of sha256(name), bech32 with the chain prefix. */
  moduleAddress(name: string): string;
}
