/**
 * Per-second accrual and reservation-aware settlement of one lease (ledger §5 and §7.2).
 *
 * A lease's rate is Σ locked_price × quantity per denom. Accrual counts whole seconds since
 * `last_settled_at`; a live withdrawal only advances `last_settled_at` by the seconds it billed
 * (the sub-second remainder carries into the next interval). The money a lease may take is
 * `spendable = balance − (reserved − own tranche)`, so it never eats other leases' tranches;
 * what it takes first consumes its own tranche.
 */
import type { Coin } from "../../chain/proto/index.ts";
import { add, amountIn, type Coins, parseAmount } from "../coins.ts";

export const NANOS_PER_SECOND = 1_000_000_000n;
/** Longest interval billed in one settlement (≈ 100 years); longer gaps count as overflow. */
export const MAX_ACCRUAL_SECONDS = 3_153_600_000n;

export interface RatedItem {
  quantity: bigint;
  lockedPrice?: Coin | undefined;
}

/** Per-second rate of a lease, per denom. */
export function leaseRate(items: readonly RatedItem[]): Coins {
  const rate: Coins = new Map();
  for (const item of items) {
    if (item.lockedPrice === undefined) continue;
    add(rate, item.lockedPrice.denom, parseAmount(item.lockedPrice.amount) * item.quantity);
  }
  return rate;
}

/** Whole seconds between two instants (ns); never negative. */
export function wholeSeconds(fromNs: bigint, toNs: bigint): bigint {
  return toNs <= fromNs ? 0n : (toNs - fromNs) / NANOS_PER_SECOND;
}

/** Reservation a new lease must hold: rate × min_lease_duration per denom. */
export function reservationFor(rate: Coins, minLeaseDurationSeconds: bigint): Coins {
  const out: Coins = new Map();
  for (const [denom, perSecond] of rate) add(out, denom, perSecond * minLeaseDurationSeconds);
  return out;
}

/** First denom whose free balance (balance − reserved, floored at 0) cannot cover `need`. */
export function insufficientDenom(balance: Coins, reserved: Coins, need: Coins): string | undefined {
  for (const [denom, amount] of need) {
    const free = amountIn(balance, denom) - amountIn(reserved, denom);
    if ((free < 0n ? 0n : free) < amount) return denom;
  }
  return undefined;
}

export interface SettleInput {
  rate: Coins;
  lastSettledNs: bigint;
  toNs: bigint;
  /** Bank balance of the tenant's credit address. */
  balance: Coins;
  /** Account aggregate reservation R. */
  reserved: Coins;
  /** This lease's remaining tranche A. */
  tranche: Coins;
}

export interface SettleResult {
  seconds: bigint;
  overflow: boolean;
  accrued: Coins;
  spendable: Coins;
  /** Moved from the credit address to the payout address. */
  transfer: Coins;
  /** Part of `transfer` taken from this lease's tranche (A and R both drop by it). */
  consumed: Coins;
  /** Withdraw-path auto-close test: some denom has accrued ≥ spendable (or nothing elapsed and spendable 0). */
  exhausted: boolean;
  /** Close-path test: the accrual could not be paid in full (or nothing elapsed and spendable 0). */
  shortfall: boolean;
  /** `last_settled_at` after a live withdrawal (previous + billed whole seconds). */
  carriedSettledNs: bigint;
}

export function settle(input: SettleInput): SettleResult {
  let seconds = wholeSeconds(input.lastSettledNs, input.toNs);
  const overflow = seconds > MAX_ACCRUAL_SECONDS;
  if (overflow) seconds = MAX_ACCRUAL_SECONDS;
  const accrued: Coins = new Map();
  const spendable: Coins = new Map();
  const transfer: Coins = new Map();
  const consumed: Coins = new Map();
  let exhausted = overflow;
  let shortfall = overflow;
  for (const [denom, perSecond] of input.rate) {
    const owed = perSecond * seconds;
    const tranche = amountIn(input.tranche, denom);
    const others = amountIn(input.reserved, denom) - tranche;
    const free = amountIn(input.balance, denom) - (others < 0n ? 0n : others);
    const canSpend = free < 0n ? 0n : free;
    add(accrued, denom, owed);
    add(spendable, denom, canSpend);
    const paid = owed < canSpend ? owed : canSpend;
    add(transfer, denom, paid);
    add(consumed, denom, paid < tranche ? paid : tranche);
    if (seconds > 0n) {
      if (owed >= canSpend) exhausted = true;
      if (owed > canSpend) shortfall = true;
    } else if (canSpend === 0n) {
      exhausted = true;
      shortfall = true;
    }
  }
  return {
    seconds,
    overflow,
    accrued,
    spendable,
    transfer,
    consumed,
    exhausted,
    shortfall,
    carriedSettledNs: input.lastSettledNs + seconds * NANOS_PER_SECOND,
  };
}

/** What a query reports as withdrawable: min(accrued, spendable) per denom, no state change. */
export function withdrawable(input: SettleInput): Coins {
  return settle(input).transfer;
}
