/**
 * The Chain port: exactly what providerd asks of the chain. Queries return typed values;
 * "not found" is `undefined`, distinct from errors (which are FredErrors with ERR_CHAIN_*
 * codes that say whether retrying could help). Transactions report one outcome per lease.
 */
import type { FredError } from "../core/errors.ts";

export const LEASE_STATES = [
  "LEASE_STATE_UNSPECIFIED",
  "LEASE_STATE_PENDING",
  "LEASE_STATE_ACTIVE",
  "LEASE_STATE_CLOSED",
  "LEASE_STATE_REJECTED",
  "LEASE_STATE_EXPIRED",
] as const;
export type LeaseStateName = (typeof LEASE_STATES)[number];

export interface CoinAmount {
  denom: string;
  /** Decimal integer string (amounts can exceed 2^53). */
  amount: string;
}

export interface ChainLeaseItem {
  skuUuid: string;
  quantity: bigint;
  serviceName: string;
  customDomain: string;
  lockedPrice: CoinAmount | undefined;
}

export interface ChainLease {
  uuid: string;
  tenant: string;
  providerUuid: string;
  state: LeaseStateName;
  items: ChainLeaseItem[];
  /** Lowercase hex; "" when the lease has none. */
  metaHash: string;
  createdAt: Date | undefined;
  closedAt: Date | undefined;
  lastSettledAt: Date | undefined;
  acknowledgedAt: Date | undefined;
  rejectedAt: Date | undefined;
  expiredAt: Date | undefined;
  rejectionReason: string;
  closureReason: string;
}

export interface CreditView {
  tenant: string;
  creditAddress: string;
  activeLeaseCount: bigint;
  pendingLeaseCount: bigint;
  balances: CoinAmount[];
  availableBalances: CoinAmount[];
}

/** The chain's own estimate for a tenant (Query/CreditEstimate): every provider's ACTIVE leases. */
export interface CreditEstimate {
  /** Credit balance, only in the denoms the tenant's ACTIVE leases burn. */
  balance: CoinAmount[];
  ratePerSecond: CoinAmount[];
  /** 0 when nothing burns or a burnt denom is empty; saturates at 2^64 − 1. */
  estimatedSeconds: bigint;
  activeLeaseCount: bigint;
}

export interface WithdrawableView {
  amounts: CoinAmount[];
  leaseCount: bigint;
  failedLeaseUuids: string[];
}

export interface BlockInfo {
  height: number;
  time: Date;
}

export type LeaseOutcomeStatus = "acknowledged" | "rejected" | "closed" | "already_done" | "failed";

export interface LeaseOutcome {
  leaseUuid: string;
  /**
   * `already_done`: the chain is already where we wanted it (e.g. acknowledging a lease
   * that is ACTIVE) — a success, not an error.
   */
  status: LeaseOutcomeStatus;
  txHash?: string;
  height?: number;
  error?: FredError;
}

export interface WithdrawPage {
  txHash: string;
  height: number;
  amounts: CoinAmount[];
  withdrawalCount: bigint;
  hasMore: boolean;
  nextKey: Uint8Array;
  failedLeaseUuids: string[];
}

export interface WithdrawSummary {
  pages: WithdrawPage[];
  /** True when the loop stopped at max_withdraw_iterations with more to do. */
  truncated: boolean;
}

export interface ChainPort {
  getLease(uuid: string, signal?: AbortSignal): Promise<ChainLease | undefined>;
  /** Every lease of the provider in `state` (all pages; `onPage` sees each as it arrives). */
  leasesByProvider(
    providerUuid: string,
    state: LeaseStateName | undefined,
    signal?: AbortSignal,
    onPage?: (page: readonly ChainLease[]) => void,
  ): Promise<ChainLease[]>;
  /** Every lease of `tenant`, with any provider, in `state` (all pages). */
  leasesByTenant(tenant: string, state?: LeaseStateName, signal?: AbortSignal): Promise<ChainLease[]>;
  /**
   * The same walk, each page handed to `onPage` and none kept: for a caller that reduces
   * the leases as they arrive (the reconciler's sweep holds 100,000 of them otherwise).
   */
  leasePagesByProvider(
    providerUuid: string,
    state: LeaseStateName | undefined,
    onPage: (page: readonly ChainLease[]) => void,
    signal?: AbortSignal,
  ): Promise<void>;
  creditAccount(tenant: string, signal?: AbortSignal): Promise<CreditView | undefined>;
  /** undefined when the tenant has no credit account. */
  creditEstimate(tenant: string, signal?: AbortSignal): Promise<CreditEstimate | undefined>;
  /** Sum over all pages of the provider's withdrawable amounts. */
  providerWithdrawable(providerUuid: string, signal?: AbortSignal): Promise<WithdrawableView>;
  latestBlock(signal?: AbortSignal): Promise<BlockInfo>;
  /** The chain id the node serves (its network), to check the configured chain_id against. */
  network(signal?: AbortSignal): Promise<string>;
  /** Whether the provider has ever had a lease, in any state (`fred placement init` asks). */
  hasLeaseHistory(providerUuid: string, signal?: AbortSignal): Promise<boolean>;
  /** The finalize-block events of one height (the event feed's fallback and gap filler). */
  blockEvents(height: number, signal: AbortSignal): Promise<unknown>;

  /**
   * Lease transactions, one outcome per lease. `lane` picks the signer that sends them
   * (an authz sub-signer when those are enabled; otherwise the provider key, whatever the lane).
   */
  acknowledge(leaseUuids: readonly string[], signal?: AbortSignal, lane?: number): Promise<LeaseOutcome[]>;
  reject(
    leaseUuids: readonly string[],
    reason: string,
    signal?: AbortSignal,
    lane?: number,
  ): Promise<LeaseOutcome[]>;
  closeLeases(
    leaseUuids: readonly string[],
    reason: string,
    signal?: AbortSignal,
    lane?: number,
  ): Promise<LeaseOutcome[]>;
  withdrawLeases(leaseUuids: readonly string[], signal?: AbortSignal): Promise<WithdrawPage[]>;
  /** Provider-wide withdraw, threading next_key until done or max_withdraw_iterations. */
  withdrawAll(providerUuid: string, signal?: AbortSignal): Promise<WithdrawSummary>;
}
