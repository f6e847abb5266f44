/**
 * SDK coin arithmetic on cosmjs `Coin` values ({denom, amount: decimal string}). Amounts are
 * bigint internally; sets of coins are kept sorted by denom with no zero entries, which is
 * the SDK's canonical `Coins` form and what its string form ("10umfx,5upwr") prints.
 */
import type { Coin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import { isValidDenom } from "../core/coin.ts";
import { sdkErrors } from "./errors.ts";

export type { Coin };

const AMOUNT = /^(0|[1-9][0-9]*)$/;
/** The SDK's Int is 256 bits. */
const MAX_AMOUNT = (1n << 256n) - 1n;

export { isValidDenom };

export function coin(amount: bigint | number | string, denom: string): Coin {
  return { denom, amount: BigInt(amount).toString() };
}

/** Parses an amount string strictly; throws sdk code 10 (invalid coins). */
export function amountOf(c: Coin): bigint {
  if (!AMOUNT.test(c.amount)) throw sdkErrors.invalidCoins.wrap(`invalid amount ${JSON.stringify(c.amount)}`);
  const v = BigInt(c.amount);
  if (v > MAX_AMOUNT) throw sdkErrors.invalidCoins.wrap("amount out of range");
  return v;
}

/**
 * Validates a Coins list the way sdk.Coins.Validate does for a message: valid denoms, sorted,
 * no duplicates, all amounts positive. Returns the amounts as bigints.
 */
export function validateCoins(coins: Coin[], allowEmpty = false): void {
  if (coins.length === 0 && !allowEmpty) throw sdkErrors.invalidCoins.wrap("empty coins");
  let prev = "";
  for (const c of coins) {
    if (!isValidDenom(c.denom)) throw sdkErrors.invalidCoins.wrap(`invalid denom: ${c.denom}`);
    const v = amountOf(c);
    if (v <= 0n) throw sdkErrors.invalidCoins.wrap(coinsToString(coins));
    if (prev !== "" && c.denom <= prev) throw sdkErrors.invalidCoins.wrap(`${coinsToString(coins)}`);
    prev = c.denom;
  }
}

/** SDK string form: "10umfx,5upwr"; empty coins → "". */
export function coinsToString(coins: Coin[]): string {
  return coins.map((c) => `${c.amount}${c.denom}`).join(",");
}

/** Sorted by denom, merged, zero entries removed. */
export function normalize(coins: Coin[]): Coin[] {
  const sums = new Map<string, bigint>();
  for (const c of coins) sums.set(c.denom, (sums.get(c.denom) ?? 0n) + amountOf(c));
  return [...sums.entries()]
    .filter(([, v]) => v !== 0n)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([denom, v]) => coin(v, denom));
}

export function addCoins(a: Coin[], b: Coin[]): Coin[] {
  return normalize([...a, ...b]);
}
