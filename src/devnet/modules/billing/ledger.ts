/**
 * The stateful money moves every billing path shares: reading a credit balance, settling an
 * ACTIVE lease into its provider's payout address (reservation-aware, via x/bank), and
 * terminating a lease (tranche released, counters moved, domain claims freed). Accounts are
 * cached per message so a batch touching one tenant twice sees its own updates.
 */
import type { CreditAccount, Lease } from "../../../chain/proto/index.ts";
import {
  LeaseState,
  type Timestamp,
  timestampFromNanos,
  timestampToNanos,
} from "../../../chain/proto/index.ts";
import { addAll, type Coins, coinsFromProto, coinsToProto, isZero, subAll } from "../../coins.ts";
import { deriveCreditAddress } from "../../economics/credit-address.ts";
import { leaseRate, type SettleResult, settle } from "../../economics/settlement.ts";
import type { ExecContext, QueryContext } from "../../module.ts";
import type { BankKeeper } from "../bank/types.ts";
import type { SkuKeeper } from "../sku/types.ts";
import { billingErrors } from "./errors.ts";
import { deleteDomain, getAccount, putAccount, putLease } from "./store.ts";

export interface BillingDeps {
  bank: BankKeeper;
  sku: SkuKeeper;
  /** Module authority, lowercase bech32. */
  authority: string;
  prefix: string;
}

export const nowNs = (ctx: ExecContext | QueryContext): bigint => BigInt(ctx.block.timeMs) * 1_000_000n;
export const nowTs = (ctx: ExecContext | QueryContext): Timestamp => timestampFromNanos(nowNs(ctx));
export const tsNs = (ts: Timestamp | undefined): bigint => (ts === undefined ? 0n : timestampToNanos(ts));

/**
 * Balances of `address`: only `denoms` when given (point reads; listing every balance means
 * a range scan, which is far slower inside a block with many pending writes).
 */
export function balanceOf(
  ctx: ExecContext | QueryContext,
  bank: BankKeeper,
  address: string,
  denoms?: Iterable<string>,
): Coins {
  if (denoms === undefined) return coinsFromProto(bank.getAllBalances(ctx, address));
  const out: Coins = new Map();
  for (const denom of denoms) {
    const amount = bank.getBalance(ctx, address, denom);
    if (amount > 0n) out.set(denom, amount);
  }
  return out;
}

export const trancheOf = (lease: Lease): Coins => coinsFromProto(lease.reservation?.remainingAmounts ?? []);

/** Per-message cache of credit accounts; `flush` writes the touched ones back. */
export class AccountCache {
  readonly #ctx: ExecContext;
  readonly #accounts = new Map<string, CreditAccount | undefined>();
  readonly #dirty = new Set<string>();

  constructor(ctx: ExecContext) {
    this.#ctx = ctx;
  }

  get(tenant: string): CreditAccount | undefined {
    if (!this.#accounts.has(tenant)) this.#accounts.set(tenant, getAccount(this.#ctx, tenant));
    return this.#accounts.get(tenant);
  }

  mustGet(tenant: string): CreditAccount {
    const acc = this.get(tenant);
    if (acc === undefined) throw billingErrors.creditAccountNotFound.wrap(tenant);
    return acc;
  }

  touch(account: CreditAccount): void {
    this.#accounts.set(account.tenant, account);
    this.#dirty.add(account.tenant);
  }

  flush(): void {
    for (const tenant of this.#dirty) putAccount(this.#ctx, this.#accounts.get(tenant)!);
    this.#dirty.clear();
  }
}

export function newAccount(tenant: string): CreditAccount {
  return {
    tenant,
    creditAddress: deriveCreditAddress(tenant),
    activeLeaseCount: 0n,
    pendingLeaseCount: 0n,
    reservedAmounts: [],
    unattributedReservedAmounts: [],
    unattributedLeaseCount: 0n,
  };
}

export interface Settlement extends SettleResult {
  payoutAddress: string;
}

/**
 * Settles an ACTIVE lease up to `toNs`: moves min(accrued, spendable) to the provider's current
 * payout address and consumes the lease's tranche. Mutates `lease` and `account` in memory
 * (last_settled_at is left to the caller: carry for withdrawals, close time for closes).
 */
export function settleActive(
  ctx: ExecContext,
  deps: BillingDeps,
  lease: Lease,
  account: CreditAccount,
  toNs: bigint,
): Settlement {
  const provider = deps.sku.getProvider(ctx, lease.providerUuid);
  if (provider === undefined) throw billingErrors.providerNotFound.wrap(lease.providerUuid);
  const tranche = trancheOf(lease);
  const reserved = coinsFromProto(account.reservedAmounts);
  const rate = leaseRate(lease.items);
  const result = settle({
    rate,
    lastSettledNs: tsNs(lease.lastSettledAt),
    toNs,
    balance: balanceOf(ctx, deps.bank, account.creditAddress, rate.keys()),
    reserved,
    tranche,
  });
  if (!isZero(result.transfer))
    deps.bank.sendCoins(ctx, account.creditAddress, provider.payoutAddress, coinsToProto(result.transfer));
  subAll(tranche, result.consumed);
  subAll(reserved, result.consumed);
  lease.reservation = { remainingAmounts: coinsToProto(tranche) };
  account.reservedAmounts = coinsToProto(reserved);
  return { ...result, payoutAddress: provider.payoutAddress };
}

/** Adds a new lease's tranche to the account reservation. */
export function reserve(account: CreditAccount, tranche: Coins): void {
  const reserved = coinsFromProto(account.reservedAmounts);
  addAll(reserved, tranche);
  account.reservedAmounts = coinsToProto(reserved);
}

/**
 * Moves a PENDING/ACTIVE lease to a terminal state: releases its remaining tranche, adjusts the
 * counters, drops its custom-domain claims, and stores it (the account is left to the cache).
 */
export function terminate(
  ctx: ExecContext,
  lease: Lease,
  account: CreditAccount,
  state: number,
  stamp: (lease: Lease) => void,
): void {
  const previous = lease.state;
  const reserved = coinsFromProto(account.reservedAmounts);
  subAll(reserved, trancheOf(lease));
  account.reservedAmounts = coinsToProto(reserved);
  lease.reservation = { remainingAmounts: [] };
  if (previous === LeaseState.LEASE_STATE_PENDING) account.pendingLeaseCount -= 1n;
  if (previous === LeaseState.LEASE_STATE_ACTIVE) account.activeLeaseCount -= 1n;
  for (const item of lease.items) if (item.customDomain !== "") deleteDomain(ctx, item.customDomain);
  lease.state = state;
  stamp(lease);
  putLease(ctx, lease, previous);
}

/** Sender's role toward a lease's provider: the provider's address or the module authority. */
export function isProviderOrAuthority(
  ctx: ExecContext,
  deps: BillingDeps,
  providerUuid: string,
  sender: string,
) {
  const provider = deps.sku.getProvider(ctx, providerUuid);
  if (provider === undefined) throw billingErrors.providerNotFound.wrap(providerUuid);
  const s = sender.toLowerCase();
  return { provider, allowed: s === deps.authority || s === provider.address.toLowerCase() };
}
