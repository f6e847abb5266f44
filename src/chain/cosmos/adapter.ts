// Over 500 lines: the one Chain port implementation; every query and lease transaction the daemon makes, with its error mapping, in one adapter.
/**
 * The Chain port on cosmjs: works the same against a manifest-ledger node and our devnet.
 * Lease transactions are optimistic: the batch is sent as is; if the chain refuses it for
 * a lease-state reason (a batch message is atomic), the leases are re-read and only those
 * still in the right state are sent again, so each lease gets its own outcome — e.g. a
 * lease already ACTIVE counts as acknowledged (`already_done`), not as an error.
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import { type Clock, systemClock } from "../../core/clock.ts";
import { type ErrorCode, FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { Logger } from "../../log.ts";
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
} from "../port.ts";
import { MsgWithdrawResponse, type Provider, type SKU } from "../proto/index.ts";
import {
  checkGasConfig,
  chunk,
  type GasConfig,
  type LeaseMsgKind,
  leaseMsgs,
  MAX_UUIDS_PER_MSG,
  sanitizeReason,
  withdrawLeasesMsg,
  withdrawProviderMsg,
} from "../tx/build.ts";
import { blockEventsFetcher } from "./block-events.ts";
import * as q from "./queries.ts";
import { connectNode, type NodeConnection } from "./rpc.ts";
import type { TxSigner } from "./signer.ts";
import { SignerLanes, type SignerLanesOptions } from "./signer-lanes.ts";
import {
  activeSkus,
  listSkus,
  providerRecord,
  resolveSku,
  type SkuFilter,
  skuAllowedList,
  skuRecord,
} from "./skus.ts";
import { balanceOf, execAs, laneFault, parseCoinText } from "./sub-signers.ts";
import { txMessages } from "./tx-messages.ts";
import { TxMetrics, TxPipeline, type TxPipelineOptions, type TxResult } from "./tx-pipeline.ts";

export interface CosmosChainOptions {
  rpcUrl: string;
  /** Read from the node when not given. */
  chainId?: string;
  /** Needed only for transactions. */
  signer?: TxSigner;
  gas?: Partial<GasConfig>;
  txTimeoutMs?: number;
  txPollIntervalMs?: number;
  /** Simulation deadline (default 5 s); past it the gas_limit fallback is used. */
  simulateTimeoutMs?: number;
  queryTimeoutMs?: number;
  queryPageLimit?: number;
  withdrawLimit?: number;
  maxWithdrawIterations?: number;
  /** Lease messages (≤ 100 UUIDs each) per tx. */
  msgsPerTx?: number;
  clock?: Clock;
  logger?: Logger;
  metrics?: TxMetrics;
  onProgress?: (line: string) => void;
  /** See TxPipelineOptions.failedSimulation. */
  failedSimulation?: "broadcast" | "refuse";
}

export const DEFAULT_GAS: GasConfig = {
  gasLimit: 1_500_000,
  gasAdjustment: 1.2,
  maxGasLimit: 0,
  gasPrice: 25,
  feeDenom: "umfx",
};

/** The state each lease transaction moves a lease from, and the state it leads to. */
const TRANSITION: Record<
  LeaseMsgKind,
  { from: LeaseStateName; to: LeaseStateName; ok: LeaseOutcome["status"]; notFrom: ErrorCode }
> = {
  acknowledge: {
    from: "LEASE_STATE_PENDING",
    to: "LEASE_STATE_ACTIVE",
    ok: "acknowledged",
    notFrom: "ERR_LEASE_NOT_PENDING",
  },
  reject: {
    from: "LEASE_STATE_PENDING",
    to: "LEASE_STATE_REJECTED",
    ok: "rejected",
    notFrom: "ERR_LEASE_NOT_PENDING",
  },
  close: {
    from: "LEASE_STATE_ACTIVE",
    to: "LEASE_STATE_CLOSED",
    ok: "closed",
    notFrom: "ERR_LEASE_NOT_ACTIVE",
  },
};

export class CosmosChain implements ChainPort {
  /** The cosmjs connection: nothing outside chain/cosmos/ sees it (the port is the surface). */
  readonly #conn: NodeConnection;
  readonly chainId: string;
  readonly pipeline: TxPipeline | undefined;
  readonly #pipelineOptions: TxPipelineOptions;
  #lanes: SignerLanes | undefined;
  readonly #options: Required<
    Pick<CosmosChainOptions, "queryPageLimit" | "withdrawLimit" | "maxWithdrawIterations" | "msgsPerTx">
  > &
    CosmosChainOptions;

  constructor(conn: NodeConnection, chainId: string, opts: CosmosChainOptions) {
    this.#conn = conn;
    this.#blockEvents = blockEventsFetcher(conn);
    this.chainId = chainId;
    this.#options = {
      queryPageLimit: 100,
      withdrawLimit: 100,
      maxWithdrawIterations: 100,
      msgsPerTx: 10,
      ...opts,
    };
    if (
      !Number.isInteger(this.#options.withdrawLimit) ||
      this.#options.withdrawLimit < 1 ||
      this.#options.withdrawLimit > 100
    )
      throw new FredError("ERR_CONFIG", "withdraw_limit must be 1..100");
    if (
      !Number.isInteger(this.#options.queryPageLimit) ||
      this.#options.queryPageLimit < 1 ||
      this.#options.queryPageLimit > 1000
    )
      throw new FredError("ERR_CONFIG", "query_page_limit must be 1..1000");
    const gas = { ...DEFAULT_GAS, ...opts.gas };
    checkGasConfig(gas);
    this.#pipelineOptions = {
      conn,
      chainId,
      gas,
      clock: opts.clock ?? systemClock,
      txTimeoutMs: opts.txTimeoutMs ?? 30_000,
      txPollIntervalMs: opts.txPollIntervalMs ?? 500,
      ...(opts.simulateTimeoutMs === undefined ? {} : { simulateTimeoutMs: opts.simulateTimeoutMs }),
      metrics: opts.metrics ?? new TxMetrics(),
      ...(opts.logger === undefined ? {} : { logger: opts.logger }),
      ...(opts.onProgress === undefined ? {} : { onProgress: opts.onProgress }),
      ...(opts.failedSimulation === undefined ? {} : { failedSimulation: opts.failedSimulation }),
    };
    this.pipeline =
      opts.signer === undefined ? undefined : new TxPipeline(this.#pipelineOptions, opts.signer);
  }

  /**
   * Adds authz sub-signer lanes: lease transactions go out as MsgExec from an active
   * sub-signer (lane `lane mod N`, round robin without a lane), in parallel with each
   * other; the provider key sends while none is active. Lanes start inactive: each
   * `converge()` pass (grants and top-ups sent by the provider key, only what is missing)
   * activates those it confirms.
   */
  enableSubSigners(
    subs: readonly TxSigner[],
    funding: { minBalance: string; topUpAmount: string },
    onFault?: SignerLanesOptions["onFault"],
  ): SignerLanes {
    const provider = this.#requirePipeline();
    if (this.#lanes !== undefined) throw new FredError("ERR_CONFIG", "sub-signers are already enabled");
    this.#lanes = new SignerLanes({
      conn: this.#conn,
      provider,
      subs,
      newPipeline: (s) => new TxPipeline(this.#pipelineOptions, s),
      minBalance: parseCoinText(funding.minBalance, "sub_signer_min_balance"),
      topUpAmount: parseCoinText(funding.topUpAmount, "sub_signer_top_up_amount"),
      ...(onFault === undefined ? {} : { onFault }),
    });
    return this.#lanes;
  }

  /** The sub-signer lanes, once enabled. */
  get lanes(): SignerLanes | undefined {
    return this.#lanes;
  }

  /** Releases the node connection. */
  disconnect(): void {
    this.#conn.close();
  }

  get address(): string {
    return this.#requirePipeline().signer.address;
  }

  #requirePipeline(): TxPipeline {
    if (this.pipeline === undefined)
      throw new FredError("ERR_CHAIN_NO_SIGNER", "this chain client has no signing key");
    return this.pipeline;
  }

  /** Sends arbitrary messages in one tx (CLI: fund credit, create/cancel leases). */
  send(messages: readonly EncodeObject[], signal?: AbortSignal): Promise<TxResult> {
    return this.#requirePipeline().send(messages, signal === undefined ? {} : { signal });
  }

  // ---- queries ----
  getLease(uuid: string, signal?: AbortSignal): Promise<ChainLease | undefined> {
    return q.getLease(this.#conn, uuid, signal);
  }
  leasesByProvider(
    providerUuid: string,
    state: LeaseStateName | undefined,
    signal?: AbortSignal,
    onPage?: (page: readonly ChainLease[]) => void,
  ): Promise<ChainLease[]> {
    return q.leasesByProvider(
      this.#conn,
      { pageLimit: this.#options.queryPageLimit },
      providerUuid,
      state,
      signal,
      onPage,
    );
  }
  leasePagesByProvider(
    providerUuid: string,
    state: LeaseStateName | undefined,
    onPage: (page: readonly ChainLease[]) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    return q.leasePagesByProvider(
      this.#conn,
      { pageLimit: this.#options.queryPageLimit },
      providerUuid,
      state,
      onPage,
      signal,
    );
  }
  creditAccount(tenant: string, signal?: AbortSignal): Promise<CreditView | undefined> {
    return q.creditAccount(this.#conn, { pageLimit: this.#options.queryPageLimit }, tenant, signal);
  }
  creditEstimate(tenant: string, signal?: AbortSignal): Promise<CreditEstimate | undefined> {
    return q.creditEstimate(this.#conn, tenant, signal);
  }
  providerWithdrawable(providerUuid: string, signal?: AbortSignal): Promise<WithdrawableView> {
    return q.providerWithdrawable(
      this.#conn,
      { pageLimit: this.#options.queryPageLimit },
      providerUuid,
      signal,
    );
  }
  /** An account's bank balance in one denom (the sub-signer lanes' own read). */
  balance(address: string, denom: string, signal?: AbortSignal): Promise<bigint> {
    return balanceOf(this.#conn, address, denom, signal);
  }
  latestBlock(signal?: AbortSignal): Promise<BlockInfo> {
    return q.latestBlock(this.#conn, signal);
  }
  network(signal?: AbortSignal): Promise<string> {
    return q.network(this.#conn, signal);
  }
  hasLeaseHistory(providerUuid: string, signal?: AbortSignal): Promise<boolean> {
    return q.hasLeaseHistory(this.#conn, providerUuid, signal);
  }
  blockEvents(height: number, signal: AbortSignal): Promise<unknown> {
    return this.#blockEvents(height, signal);
  }
  readonly #blockEvents: (height: number, signal: AbortSignal) => Promise<unknown>;

  /** Every lease of `tenant` (all pages), optionally in one state (the tenant CLI's list). */
  leasesByTenant(tenant: string, state?: LeaseStateName, signal?: AbortSignal): Promise<ChainLease[]> {
    return q.leasesByTenant(this.#conn, { pageLimit: this.#options.queryPageLimit }, tenant, state, signal);
  }

  /** The provider's on-chain record, or undefined when the chain has none. */
  providerRecord(uuid: string, signal?: AbortSignal): Promise<Provider | undefined> {
    return providerRecord(this.#conn, uuid, signal);
  }

  /** Every active SKU on chain, all providers (the tenant CLI's checks and suggestions). */
  activeSkus(signal?: AbortSignal): Promise<SKU[]> {
    return activeSkus(this.#conn, signal);
  }

  /** The SKUs `filter` selects, every page (the operator's `fred chain sku list`). */
  skus(filter: SkuFilter, signal?: AbortSignal): Promise<SKU[]> {
    return listSkus(this.#conn, filter, signal);
  }

  /** The addresses x/sku lets create providers and SKUs besides its module authority. */
  skuAllowedList(signal?: AbortSignal): Promise<string[]> {
    return skuAllowedList(this.#conn, signal);
  }

  /** One SKU by UUID, active or not; undefined when the chain has none. */
  skuRecord(uuid: string, signal?: AbortSignal): Promise<SKU | undefined> {
    return skuRecord(this.#conn, uuid, signal);
  }

  /** A SKU UUID passes through; a name must match exactly one active SKU (the tenant CLI). */
  resolveSku(ref: string, signal?: AbortSignal): Promise<string> {
    return resolveSku(this.#conn, ref, signal);
  }

  // ---- lease transactions ----
  /**
   * With sub-signers enabled, an active sub-signer sends (`lane` picks which, round robin
   * without one); otherwise the provider key.
   */
  acknowledge(leaseUuids: readonly string[], signal?: AbortSignal, lane?: number): Promise<LeaseOutcome[]> {
    return this.#leaseTx("acknowledge", leaseUuids, "", signal, lane);
  }
  reject(
    leaseUuids: readonly string[],
    reason: string,
    signal?: AbortSignal,
    lane?: number,
  ): Promise<LeaseOutcome[]> {
    return this.#leaseTx("reject", leaseUuids, sanitizeReason(reason), signal, lane);
  }
  closeLeases(
    leaseUuids: readonly string[],
    reason: string,
    signal?: AbortSignal,
    lane?: number,
  ): Promise<LeaseOutcome[]> {
    return this.#leaseTx("close", leaseUuids, sanitizeReason(reason), signal, lane);
  }

  #laneFor(lane: number | undefined): TxPipeline {
    return this.#lanes?.pick(lane) ?? this.#requirePipeline();
  }

  async #leaseTx(
    kind: LeaseMsgKind,
    uuids: readonly string[],
    reason: string,
    signal: AbortSignal | undefined,
    lane: number | undefined,
  ): Promise<LeaseOutcome[]> {
    const pipeline = this.#laneFor(lane);
    const outcomes = new Map<string, LeaseOutcome>();
    const todo: string[] = [];
    for (const u of new Set(uuids)) {
      if (isCanonicalUuid(u)) todo.push(u);
      else
        outcomes.set(u, {
          leaseUuid: u,
          status: "failed",
          error: new FredError("ERR_INVALID_ARGUMENT", "lease UUID is not canonical"),
        });
    }
    const perTx = MAX_UUIDS_PER_MSG * this.#options.msgsPerTx;
    await Promise.all(
      chunk(todo, perTx).map((group) => this.#sendGroup(pipeline, kind, group, reason, outcomes, 0, signal)),
    );
    return [...new Set(uuids)].map((u) => outcomes.get(u) as LeaseOutcome);
  }

  async #sendGroup(
    pipeline: TxPipeline,
    kind: LeaseMsgKind,
    group: string[],
    reason: string,
    outcomes: Map<string, LeaseOutcome>,
    round: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const t = TRANSITION[kind];
    try {
      // Lease messages are always the provider's; a sub-signer delivers them inside MsgExec.
      const provider = this.#requirePipeline();
      const msgs = leaseMsgs(kind, provider.signer.address, group, reason);
      const wrapped = pipeline === provider ? msgs : [execAs(txMessages, pipeline.signer.address, msgs)];
      const res = await pipeline.send(wrapped, signal === undefined ? {} : { signal });
      for (const u of group)
        outcomes.set(u, { leaseUuid: u, status: t.ok, txHash: res.txHash, height: res.height });
      return;
    } catch (err) {
      const e = err instanceof FredError ? err : new FredError("ERR_CHAIN_TX", String(err), { cause: err });
      const fault = laneFault(e);
      const provider = this.#requirePipeline();
      if (fault !== undefined && pipeline !== provider && this.#lanes !== undefined) {
        // The sub-signer, not the leases, is at fault and nothing landed: restart its lane
        // and send the same messages with the provider key, which needs no grant.
        this.#lanes.fault(pipeline, fault, e);
        return this.#sendGroup(provider, kind, group, reason, outcomes, round, signal);
      }
      const failure = (e.details?.failure as { kind?: string } | undefined)?.kind;
      // A lease state error, delivered or (for a person's command) found by the simulation:
      // read each lease's state to tell which one is not where the message expects it.
      const sortable =
        (e.code === "ERR_TX_FAILED" && failure === "lease") || e.code === "ERR_TX_SIMULATION_REFUSED";
      if (!sortable || round >= 2) {
        for (const u of group) outcomes.set(u, { leaseUuid: u, status: "failed", error: e });
        return;
      }
    }
    // A lease in the batch was not in the expected state: sort them out one by one.
    const retry: string[] = [];
    await Promise.all(
      group.map(async (u) => {
        try {
          const lease = await this.getLease(u, signal);
          if (lease === undefined) {
            outcomes.set(u, {
              leaseUuid: u,
              status: "failed",
              error: new FredError("ERR_LEASE_NOT_FOUND", `lease ${u} not found`),
            });
          } else if (lease.state === t.to) {
            outcomes.set(u, { leaseUuid: u, status: "already_done" });
          } else if (lease.state === t.from) {
            retry.push(u);
          } else {
            outcomes.set(u, {
              leaseUuid: u,
              status: "failed",
              error: new FredError(t.notFrom, `lease ${u} is ${lease.state}`, {
                details: { state: lease.state },
              }),
            });
          }
        } catch (err) {
          outcomes.set(u, {
            leaseUuid: u,
            status: "failed",
            error: err instanceof FredError ? err : new FredError("ERR_CHAIN_QUERY", String(err)),
          });
        }
      }),
    );
    if (retry.length > 0)
      await this.#sendGroup(pipeline, kind, retry.sort(), reason, outcomes, round + 1, signal);
  }

  // ---- withdrawals ----
  #withdrawPage(res: TxResult): WithdrawPage {
    const any = res.msgResponses[0];
    if (any === undefined || any.typeUrl !== MsgWithdrawResponse.typeUrl)
      throw new FredError("ERR_CHAIN_TX", `withdraw tx ${res.txHash} carried no MsgWithdrawResponse`);
    const r = MsgWithdrawResponse.decode(any.value);
    return {
      txHash: res.txHash,
      height: res.height,
      amounts: q.toCoins(r.totalAmounts),
      withdrawalCount: r.withdrawalCount,
      hasMore: r.hasMore,
      nextKey: r.nextKey,
      failedLeaseUuids: r.failedLeaseUuids,
    };
  }

  async withdrawLeases(leaseUuids: readonly string[], signal?: AbortSignal): Promise<WithdrawPage[]> {
    const pipeline = this.#requirePipeline();
    for (const u of leaseUuids)
      if (!isCanonicalUuid(u))
        throw new FredError("ERR_INVALID_ARGUMENT", `lease UUID ${JSON.stringify(u)} is not canonical`);
    const pages: WithdrawPage[] = [];
    for (const group of chunk([...new Set(leaseUuids)], MAX_UUIDS_PER_MSG)) {
      const res = await pipeline.send(
        [withdrawLeasesMsg(pipeline.signer.address, group)],
        signal === undefined ? {} : { signal },
      );
      pages.push(this.#withdrawPage(res));
    }
    return pages;
  }

  async withdrawAll(providerUuid: string, signal?: AbortSignal): Promise<WithdrawSummary> {
    const pipeline = this.#requirePipeline();
    if (!isCanonicalUuid(providerUuid))
      throw new FredError("ERR_INVALID_ARGUMENT", "provider UUID is not canonical");
    const pages: WithdrawPage[] = [];
    let key: Uint8Array = new Uint8Array();
    for (let i = 0; i < this.#options.maxWithdrawIterations; i++) {
      const msg = withdrawProviderMsg(
        pipeline.signer.address,
        providerUuid,
        this.#options.withdrawLimit,
        key,
      );
      const page = this.#withdrawPage(await pipeline.send([msg], signal === undefined ? {} : { signal }));
      pages.push(page);
      if (page.nextKey.length === 0) return { pages, truncated: false };
      key = page.nextKey;
    }
    return { pages, truncated: true };
  }
}

export async function openCosmosChain(opts: CosmosChainOptions): Promise<CosmosChain> {
  const metrics = opts.metrics;
  const conn = await connectNode(
    opts.rpcUrl,
    opts.queryTimeoutMs ?? 10_000,
    opts.clock ?? systemClock,
    // Read at each query: the registration sets the hook after the chain is opened.
    (path, seconds) => metrics?.onQuery(path, seconds),
  );
  let chainId = opts.chainId;
  if (chainId === undefined || chainId === "") {
    try {
      chainId = (await conn.status()).network;
    } catch (err) {
      conn.close();
      throw new FredError(
        "ERR_CHAIN_UNAVAILABLE",
        `cannot reach the chain at ${opts.rpcUrl}: ${(err as Error).message}`,
        { retryable: true, cause: err },
      );
    }
  }
  return new CosmosChain(conn, chainId, opts);
}
