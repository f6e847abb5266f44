import type { CoinAmount, CreditEstimate } from "../../chain/port.ts";

/**
 * The depletion arithmetic of the credit monitor, pure and clamped: amounts are bigints
 * (they exceed 2^53), a horizon is never negative and never past MAX_HORIZON_S, so the
 * date it gives is always a valid one and nothing overflows whatever the chain reports.
 */

/** About 292 years: far enough to mean "not in any planning horizon", small enough for a Date. */
export const MAX_HORIZON_S = 9_223_372_036n;

export interface CreditHorizon {
  /** Balance in the denoms the tenant's ACTIVE leases burn. */
  balance: CoinAmount[];
  burnPerHour: CoinAmount[];
  /** Whole seconds until the first burnt denom runs out; undefined when nothing burns. */
  secondsLeft: bigint | undefined;
  /** Every burnt denom's balance is zero (the reference's "balance all zero"). */
  empty: boolean;
}

function amount(coins: readonly CoinAmount[], denom: string): bigint {
  let sum = 0n;
  for (const c of coins) if (c.denom === denom) sum += toBig(c.amount);
  return sum;
}

/** A decimal amount from the chain; anything unparsable or negative counts as zero. */
function toBig(text: string): bigint {
  return /^[0-9]+$/.test(text) ? BigInt(text) : 0n;
}

export function horizonOf(estimate: CreditEstimate): CreditHorizon {
  const burning = estimate.ratePerSecond.filter((r) => toBig(r.amount) > 0n);
  const denoms = [...new Set(burning.map((r) => r.denom))].sort();
  let secondsLeft: bigint | undefined;
  let empty = denoms.length > 0;
  for (const denom of denoms) {
    const have = amount(estimate.balance, denom);
    if (have > 0n) empty = false;
    const s = have / amount(burning, denom);
    if (secondsLeft === undefined || s < secondsLeft) secondsLeft = s;
  }
  if (secondsLeft !== undefined && secondsLeft > MAX_HORIZON_S) secondsLeft = MAX_HORIZON_S;
  return {
    balance: denoms.map((denom) => ({ denom, amount: amount(estimate.balance, denom).toString() })),
    burnPerHour: denoms.map((denom) => ({ denom, amount: (amount(burning, denom) * 3600n).toString() })),
    secondsLeft,
    empty,
  };
}

/** When the credit runs out, in epoch ms, from a read taken at `readAtMs`. */
export function depletesAtMs(horizon: CreditHorizon, readAtMs: number): number | undefined {
  if (horizon.secondsLeft === undefined) return undefined;
  return readAtMs + Number(horizon.secondsLeft) * 1000;
}

/** The SDK's coin text ("5upwr,7umfx"; "" for none), as the chain writes amounts. */
export function coinText(coins: readonly CoinAmount[]): string {
  return coins.map((c) => `${c.amount}${c.denom}`).join(",");
}
