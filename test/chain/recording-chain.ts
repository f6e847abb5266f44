import type {
  BlockInfo,
  ChainLease,
  ChainPort,
  CreditEstimate,
  CreditView,
  LeaseOutcome,
  LeaseStateName,
  WithdrawableView,
  WithdrawPage,
  WithdrawSummary,
} from "../../src/chain/port.ts";
import { FredError } from "../../src/core/errors.ts";
import { isCanonicalUuid, newUuidV4 } from "../../src/core/uuid.ts";

/** What a recording chain was asked to send. */
export type SentTx = { kind: string; uuids: readonly string[]; reason?: string };

/** The state a lease transaction moves a lease from and to, as the chain enforces it. */
const TRANSITIONS = {
  acknowledge: { from: "LEASE_STATE_PENDING", to: "LEASE_STATE_ACTIVE", ok: "acknowledged" },
  reject: { from: "LEASE_STATE_PENDING", to: "LEASE_STATE_REJECTED", ok: "rejected" },
  close: { from: "LEASE_STATE_ACTIVE", to: "LEASE_STATE_CLOSED", ok: "closed" },
} as const;
const NOT_FROM = {
  LEASE_STATE_PENDING: "ERR_LEASE_NOT_PENDING",
  LEASE_STATE_ACTIVE: "ERR_LEASE_NOT_ACTIVE",
} as const;

/**
 * The Chain port in memory, for the lifecycle suites and the port's contract suite (which
 * runs the same cases against CosmosChain on a devnet). Leases live in `leases`; every
 * lease transaction is recorded in `sent` before it is applied with the chain's rules:
 * one outcome per lease, an already-reached state is `already_done`, a lease in another
 * state fails typed. `reads` replaces any method a suite wants to script.
 */
export class RecordingChain implements ChainPort {
  readonly sent: SentTx[];
  readonly leases = new Map<string, ChainLease>();
  readonly chainId: string;
  readonly pageLimit: number;
  height = 1;
  #tx = 0;

  constructor(opts: { sent?: SentTx[]; chainId?: string; pageLimit?: number } = {}) {
    this.sent = opts.sent ?? [];
    this.chainId = opts.chainId ?? "fred-recording-1";
    this.pageLimit = opts.pageLimit ?? 100;
  }

  /** Adds a PENDING lease of `providerUuid` (fields may be overridden); returns it. */
  addLease(providerUuid: string, over: Partial<ChainLease> = {}): ChainLease {
    const lease: ChainLease = {
      uuid: newUuidV4(),
      tenant: "manifest1tenant",
      providerUuid,
      state: "LEASE_STATE_PENDING",
      items: [],
      metaHash: "",
      createdAt: new Date(0),
      closedAt: undefined,
      lastSettledAt: undefined,
      acknowledgedAt: undefined,
      rejectedAt: undefined,
      expiredAt: undefined,
      rejectionReason: "",
      closureReason: "",
      ...over,
    };
    this.leases.set(lease.uuid, lease);
    return lease;
  }

  async getLease(uuid: string): Promise<ChainLease | undefined> {
    requireUuid(uuid, "lease UUID");
    const lease = this.leases.get(uuid);
    return lease === undefined ? undefined : { ...lease };
  }

  async leasesByProvider(
    providerUuid: string,
    state: LeaseStateName | undefined,
    _signal?: AbortSignal,
    onPage?: (page: readonly ChainLease[]) => void,
  ): Promise<ChainLease[]> {
    requireUuid(providerUuid, "provider UUID");
    const all = [...this.leases.values()]
      .filter((l) => l.providerUuid === providerUuid && (state === undefined || l.state === state))
      .sort((a, b) => (a.uuid < b.uuid ? -1 : 1))
      .map((l) => ({ ...l }));
    for (let i = 0; i < all.length; i += this.pageLimit) onPage?.(all.slice(i, i + this.pageLimit));
    return all;
  }

  async leasesByTenant(tenant: string, state?: LeaseStateName, _signal?: AbortSignal): Promise<ChainLease[]> {
    return [...this.leases.values()]
      .filter((l) => l.tenant === tenant && (state === undefined || l.state === state))
      .sort((a, b) => (a.uuid < b.uuid ? -1 : 1))
      .map((l) => ({ ...l }));
  }

  /** Pages of what `leasesByProvider` returns (a suite's scripted listing included). */
  async leasePagesByProvider(
    providerUuid: string,
    state: LeaseStateName | undefined,
    onPage: (page: readonly ChainLease[]) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const all = await this.leasesByProvider(providerUuid, state, signal);
    for (let i = 0; i < all.length; i += this.pageLimit) onPage(all.slice(i, i + this.pageLimit));
  }

  async creditAccount(_tenant: string): Promise<CreditView | undefined> {
    return undefined;
  }

  async creditEstimate(_tenant: string): Promise<CreditEstimate | undefined> {
    return undefined;
  }

  async providerWithdrawable(providerUuid: string): Promise<WithdrawableView> {
    requireUuid(providerUuid, "provider UUID");
    return { amounts: [], leaseCount: 0n, failedLeaseUuids: [] };
  }

  async latestBlock(): Promise<BlockInfo> {
    return { height: this.height, time: new Date() };
  }

  async network(): Promise<string> {
    return this.chainId;
  }

  async hasLeaseHistory(providerUuid: string): Promise<boolean> {
    requireUuid(providerUuid, "provider UUID");
    return [...this.leases.values()].some((l) => l.providerUuid === providerUuid);
  }

  async blockEvents(): Promise<unknown> {
    return [];
  }

  acknowledge(uuids: readonly string[]): Promise<LeaseOutcome[]> {
    this.sent.push({ kind: "acknowledge", uuids });
    return Promise.resolve(this.#apply("acknowledge", uuids, ""));
  }

  reject(uuids: readonly string[], reason: string): Promise<LeaseOutcome[]> {
    this.sent.push({ kind: "reject", uuids, reason });
    return Promise.resolve(this.#apply("reject", uuids, reason));
  }

  closeLeases(uuids: readonly string[], reason: string): Promise<LeaseOutcome[]> {
    this.sent.push({ kind: "close", uuids, reason });
    return Promise.resolve(this.#apply("close", uuids, reason));
  }

  async withdrawLeases(uuids: readonly string[]): Promise<WithdrawPage[]> {
    for (const u of uuids) requireUuid(u, "lease UUID");
    return [];
  }

  async withdrawAll(providerUuid: string): Promise<WithdrawSummary> {
    requireUuid(providerUuid, "provider UUID");
    return { pages: [], truncated: false };
  }

  #apply(kind: keyof typeof TRANSITIONS, uuids: readonly string[], reason: string): LeaseOutcome[] {
    const t = TRANSITIONS[kind];
    const txHash = `FAKE${String(++this.#tx).padStart(60, "0")}`;
    this.height++;
    return [...new Set(uuids)].map((leaseUuid): LeaseOutcome => {
      if (!isCanonicalUuid(leaseUuid))
        return failed(leaseUuid, new FredError("ERR_INVALID_ARGUMENT", "lease UUID is not canonical"));
      const lease = this.leases.get(leaseUuid);
      if (lease === undefined)
        return failed(leaseUuid, new FredError("ERR_LEASE_NOT_FOUND", `lease ${leaseUuid} not found`));
      if (lease.state === t.to) return { leaseUuid, status: "already_done" };
      if (lease.state !== t.from)
        return failed(
          leaseUuid,
          new FredError(NOT_FROM[t.from], `lease ${leaseUuid} is ${lease.state}`, {
            details: { state: lease.state },
          }),
        );
      lease.state = t.to;
      if (kind === "reject") lease.rejectionReason = reason;
      if (kind === "close") lease.closureReason = reason;
      return { leaseUuid, status: t.ok, txHash, height: this.height };
    });
  }
}

function failed(leaseUuid: string, error: FredError): LeaseOutcome {
  return { leaseUuid, status: "failed", error };
}

function requireUuid(value: string, what: string): void {
  if (!isCanonicalUuid(value))
    throw new FredError("ERR_INVALID_ARGUMENT", `${what} must be a canonical lowercase UUID`);
}

/** A recording chain with some methods scripted by the suite (`reads` wins). */
export function recordingChain(sent: SentTx[], reads: Partial<ChainPort> = {}): ChainPort {
  const chain = new RecordingChain({ sent });
  return Object.assign(chain, reads);
}
