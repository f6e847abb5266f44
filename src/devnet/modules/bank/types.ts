import type { Metadata } from "cosmjs-types/cosmos/bank/v1beta1/bank";
import type { Coin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import type { ExecContext, QueryContext } from "../../module.ts";

/** Keeper name to pass to `app.keeper<BankKeeper>(BANK)`. */
export const BANK = "bank";

/**
 * What other modules may do with balances. Amounts are SDK coins (decimal-string amounts);
 * see `../../coins.ts` for parsing, arithmetic and the SDK string form.
 */
export interface BankKeeper {
  /** Balance of one denom (0n when absent). */
  getBalance(ctx: ExecContext | QueryContext, address: string, denom: string): bigint;
  /** Every non-zero balance of `address`, sorted by denom. */
  getAllBalances(ctx: ExecContext | QueryContext, address: string): Coin[];
  /**
   * Moves coins, emitting the SDK's `coin_spent`, `coin_received`, `transfer` and
   * `message{sender}` events; creates the recipient's account when it has none. Throws
   * sdk code 5 "spendable balance … is smaller than …: insufficient funds".
   */
  sendCoins(ctx: ExecContext, from: string, to: string, amount: Coin[]): void;
  /** Creates coins (genesis funding only); emits `coinbase` + `coin_received`. */
  mintCoins(ctx: ExecContext, to: string, amount: Coin[]): void;
  /** Total supply of `denom`. */
  getSupply(ctx: ExecContext | QueryContext, denom: string): bigint;
  /** Sets the metadata of `metadata.base` (genesis: the fee denom's and the PWR denom's). */
  setDenomMetadata(ctx: ExecContext, metadata: Metadata): void;
  /** The metadata of a base denom; undefined when none was set. */
  getDenomMetadata(ctx: ExecContext | QueryContext, denom: string): Metadata | undefined;
}
