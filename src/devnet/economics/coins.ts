/**
 * Multi-denom amounts as exact bigints. The chain's Coins type is a denom-sorted list without
 * zero entries; we keep a Map while computing and convert at the edges.
 */
import type { Coin } from "../../chain/proto/index.ts";

export type Coins = Map<string, bigint>;

export { isValidDenom } from "../../core/coin.ts";

/** Parses a list of proto Coins (amounts as decimal strings); negative or malformed amounts throw. */
export function coinsFromProto(list: readonly Coin[]): Coins {
  const out: Coins = new Map();
  for (const c of list) add(out, c.denom, parseAmount(c.amount));
  return out;
}

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

export function amountOf(coins: Coins, denom: string): bigint {
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
