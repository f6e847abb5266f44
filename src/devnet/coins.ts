/**
 * The devnet's coins, in two forms. On the wire and in messages, a list of cosmjs `Coin`
 * values ({denom, amount: decimal string}) kept sorted by denom with no zero entries: the
 * SDK's canonical `Coins` form, what its string form ("10umfx,5upwr") prints, and what a
 * message is validated against (sdk code 10 on a bad one). While billing computes, a `Coins`
 * map of exact bigints, converted at the edges (`coinsFromProto`, `coinsToProto`).
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

// --- Coins maps: billing's arithmetic -------------------------------------------------

export type Coins = Map<string, bigint>;

/** Parses a list of proto Coins (amounts as decimal strings); negative or malformed amounts throw. */
export function coinsFromProto(list: readonly Coin[]): Coins {
  const out: Coins = new Map();
  for (const c of list) add(out, c.denom, parseAmount(c.amount));
  return out;
}

/** An amount from the devnet's own state: a malformed one is a bug, not a tenant's error (unlike `amountOf`). */
export function parseAmount(amount: string): bigint {
  if (!/^[0-9]+$/.test(amount)) throw new RangeError(`invalid coin amount ${JSON.stringify(amount)}`);
  return BigInt(amount);
}

/** Denom-sorted proto Coins with zero entries dropped (the SDK's sanitized form). */
export function coinsToProto(coins: Coins): Coin[] {
  return sortedDenoms(coins)
    .filter((d) => (coins.get(d) ?? 0n) > 0n)
    .map((denom) => ({ denom, amount: coins.get(denom)!.toString() }));
}

/** SDK string form: `1000upwr,5umfx` (denom order, zeros dropped, empty → ""). */
export function formatCoins(coins: Coins): string {
  return coinsToProto(coins)
    .map((c) => `${c.amount}${c.denom}`)
    .join(",");
}

export function sortedDenoms(coins: Coins): string[] {
  return [...coins.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The map's amount of `denom` (zero when absent). */
export function amountIn(coins: Coins, denom: string): bigint {
  return coins.get(denom) ?? 0n;
}

/** Adds in place (negative `amount` subtracts; a result below zero throws: it would be a bug). */
export function add(coins: Coins, denom: string, amount: bigint): void {
  const next = (coins.get(denom) ?? 0n) + amount;
  if (next < 0n) throw new RangeError(`negative ${denom} amount`);
  if (next === 0n) coins.delete(denom);
  else coins.set(denom, next);
}

export function addAll(into: Coins, other: Coins): void {
  for (const [denom, amount] of other) add(into, denom, amount);
}

export function subAll(from: Coins, other: Coins): void {
  for (const [denom, amount] of other) add(from, denom, -amount);
}

export function scale(coins: Coins, factor: bigint): Coins {
  const out: Coins = new Map();
  for (const [denom, amount] of coins) if (amount * factor > 0n) out.set(denom, amount * factor);
  return out;
}

export function clone(coins: Coins): Coins {
  return new Map(coins);
}

export function isZero(coins: Coins): boolean {
  for (const amount of coins.values()) if (amount !== 0n) return false;
  return true;
}

export function coinsEqual(a: Coins, b: Coins): boolean {
  return formatCoins(a) === formatCoins(b);
}
