/**
 * The Chain port's queries over ABCI: lease by UUID, leases by provider and state (every
 * page), lease history, credit account, provider withdrawable (every page, summed), and
 * from the node's status the latest block and the network (chain id).
 * Pagination follows the chain's cursors: `next_key` is passed back as `key` until empty.
 * At the end, the conversions from the protobuf billing types to the port's plain shapes.
 */
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import {
  type BlockInfo,
  type ChainLease,
  type CoinAmount,
  type CreditEstimate,
  type CreditView,
  LEASE_STATES,
  type LeaseStateName,
  type WithdrawableView,
} from "../port.ts";
import {
  type Coin,
  type Lease,
  QueryCreditAccountRequest,
  QueryCreditAccountResponse,
  QueryCreditEstimateRequest,
  QueryCreditEstimateResponse,
  QueryLeaseRequest,
  QueryLeaseResponse,
  QueryLeasesByProviderRequest,
  QueryLeasesByProviderResponse,
  QueryLeasesByTenantRequest,
  QueryLeasesByTenantResponse,
  QueryProviderWithdrawableRequest,
  QueryProviderWithdrawableResponse,
  type Timestamp,
} from "../proto/index.ts";
import { abciQuery, abciQueryOptional, chainError, type NodeConnection } from "./rpc.ts";

const Q = "/liftedinit.billing.v1.Query/";
/** Pages beyond this mean a cursor that never ends: refuse rather than loop forever. */
const MAX_PAGES = 10_000;

export interface QueryOptions {
  /** Page size for list queries (query_page_limit). */
  pageLimit: number;
}

function requireUuid(value: string, what: string): void {
  if (!isCanonicalUuid(value))
    throw new FredError("ERR_INVALID_ARGUMENT", `${what} must be a canonical lowercase UUID`);
}

export async function getLease(
  conn: NodeConnection,
  uuid: string,
  signal?: AbortSignal,
): Promise<ChainLease | undefined> {
  requireUuid(uuid, "lease UUID");
  const res = await abciQueryOptional(
    conn,
    `${Q}Lease`,
    QueryLeaseRequest,
    QueryLeaseResponse,
    QueryLeaseRequest.fromPartial({ leaseUuid: uuid }),
    signal,
  );
  return res?.lease === undefined ? undefined : toChainLease(res.lease);
}

export async function leasesByProvider(
  conn: NodeConnection,
  opts: QueryOptions,
  providerUuid: string,
  state: LeaseStateName | undefined,
  signal?: AbortSignal,
  onPage?: (page: readonly ChainLease[]) => void,
): Promise<ChainLease[]> {
  const out: ChainLease[] = [];
  await leasePagesByProvider(
    conn,
    opts,
    providerUuid,
    state,
    (page) => {
      out.push(...page);
      onPage?.(page);
    },
    signal,
  );
  return out;
}

/** Every page of the provider's leases in `state`, handed to `onPage` as it arrives (none kept). */
export async function leasePagesByProvider(
  conn: NodeConnection,
  opts: QueryOptions,
  providerUuid: string,
  state: LeaseStateName | undefined,
  onPage: (page: readonly ChainLease[]) => void,
  signal?: AbortSignal,
): Promise<void> {
  requireUuid(providerUuid, "provider UUID");
  await walkLeases(
    "LeasesByProvider",
    (key) =>
      abciQuery(
        conn,
        `${Q}LeasesByProvider`,
        QueryLeasesByProviderRequest,
        QueryLeasesByProviderResponse,
        QueryLeasesByProviderRequest.fromPartial({
          providerUuid,
          stateFilter: state === undefined ? 0 : stateNumber(state),
          pagination: { key, limit: BigInt(opts.pageLimit) },
        }),
        signal,
      ),
    onPage,
  );
}

/** Every lease of one tenant (all pages), optionally in one state: the tenant CLI's `list`. */
export async function leasesByTenant(
  conn: NodeConnection,
  opts: QueryOptions,
  tenant: string,
  state: LeaseStateName | undefined,
  signal?: AbortSignal,
): Promise<ChainLease[]> {
  if (typeof tenant !== "string" || tenant === "")
    throw new FredError("ERR_INVALID_ARGUMENT", "tenant address must not be empty");
  return listLeases("LeasesByTenant", (key) =>
    abciQuery(
      conn,
      `${Q}LeasesByTenant`,
      QueryLeasesByTenantRequest,
      QueryLeasesByTenantResponse,
      QueryLeasesByTenantRequest.fromPartial({
        tenant,
        stateFilter: state === undefined ? 0 : stateNumber(state),
        pagination: { key, limit: BigInt(opts.pageLimit) },
      }),
      signal,
    ),
  );
}

interface LeasePage {
  leases: Parameters<typeof toChainLease>[0][];
  pagination?: { nextKey?: Uint8Array } | undefined;
}

/** Follows a lease list's cursor to its end; a cursor that does not advance is refused. */
async function listLeases(
  what: string,
  fetchPage: (key: Uint8Array) => Promise<LeasePage>,
): Promise<ChainLease[]> {
  const out: ChainLease[] = [];
  await walkLeases(what, fetchPage, (page) => out.push(...page));
  return out;
}

/**
 * The cursor walk behind every lease list: each page converted and handed to `onPage`. The
 * next page is asked for before this one is converted, so the node works on it meanwhile (a
 * 100,000-lease listing is 1,000 round trips in a row otherwise).
 */
async function walkLeases(
  what: string,
  fetchPage: (key: Uint8Array) => Promise<LeasePage>,
  onPage: (page: readonly ChainLease[]) => void,
): Promise<void> {
  let key: Uint8Array = new Uint8Array();
  let pending = fetchPage(key);
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await pending;
    const next = res.pagination?.nextKey ?? new Uint8Array();
    const advanced = next.length > 0 && !Buffer.from(next).equals(Buffer.from(key));
    if (advanced && page + 1 < MAX_PAGES) {
      pending = fetchPage(next);
      // Awaited on the next turn; if onPage throws first, nobody will, and that is fine.
      pending.catch(() => {});
    }
    onPage(res.leases.map(toChainLease));
    if (next.length === 0) return;
    if (!advanced) throw new FredError("ERR_CHAIN_QUERY", `${what} cursor did not advance`);
    key = next;
  }
  throw new FredError("ERR_CHAIN_QUERY", `${what} exceeded ${MAX_PAGES} pages`);
}

export async function creditAccount(
  conn: NodeConnection,
  opts: QueryOptions,
  tenant: string,
  signal?: AbortSignal,
): Promise<CreditView | undefined> {
  if (typeof tenant !== "string" || tenant === "")
    throw new FredError("ERR_INVALID_ARGUMENT", "tenant address must not be empty");
  const balances = new Map<string, bigint>();
  const available = new Map<string, bigint>();
  let first: ReturnType<typeof QueryCreditAccountResponse.decode> | undefined;
  let key: Uint8Array = new Uint8Array();
  for (let page = 0; page < MAX_PAGES; page++) {
    const req = QueryCreditAccountRequest.fromPartial({
      tenant,
      pagination: { key, limit: BigInt(opts.pageLimit) },
    });
    const res = await abciQueryOptional(
      conn,
      `${Q}CreditAccount`,
      QueryCreditAccountRequest,
      QueryCreditAccountResponse,
      req,
      signal,
    );
    if (res === undefined) return undefined;
    first ??= res;
    addCoins(balances, res.balances);
    addCoins(available, res.availableBalances);
    const next = res.pagination?.nextKey ?? new Uint8Array();
    if (next.length === 0 || Buffer.from(next).equals(Buffer.from(key))) break;
    key = next;
  }
  const acct = first?.creditAccount;
  if (acct === undefined) return undefined;
  return {
    tenant: acct.tenant,
    creditAddress: acct.creditAddress,
    activeLeaseCount: acct.activeLeaseCount,
    pendingLeaseCount: acct.pendingLeaseCount,
    balances: coinsFromMap(balances),
    availableBalances: coinsFromMap(available),
  };
}

export async function creditEstimate(
  conn: NodeConnection,
  tenant: string,
  signal?: AbortSignal,
): Promise<CreditEstimate | undefined> {
  if (typeof tenant !== "string" || tenant === "")
    throw new FredError("ERR_INVALID_ARGUMENT", "tenant address must not be empty");
  const res = await abciQueryOptional(
    conn,
    `${Q}CreditEstimate`,
    QueryCreditEstimateRequest,
    QueryCreditEstimateResponse,
    QueryCreditEstimateRequest.fromPartial({ tenant }),
    signal,
  );
  if (res === undefined) return undefined;
  return {
    balance: toCoins(res.currentBalance),
    ratePerSecond: toCoins(res.totalRatePerSecond),
    estimatedSeconds: res.estimatedDurationSeconds,
    activeLeaseCount: res.activeLeaseCount,
  };
}

export async function providerWithdrawable(
  conn: NodeConnection,
  opts: QueryOptions,
  providerUuid: string,
  signal?: AbortSignal,
): Promise<WithdrawableView> {
  requireUuid(providerUuid, "provider UUID");
  const sums = new Map<string, bigint>();
  let leaseCount = 0n;
  const failed: string[] = [];
  let key: Uint8Array = new Uint8Array();
  // The chain caps this query's page at 100.
  const limit = BigInt(Math.min(opts.pageLimit, 100));
  for (let page = 0; page < MAX_PAGES; page++) {
    const req = QueryProviderWithdrawableRequest.fromPartial({ providerUuid, pagination: { key, limit } });
    const res = await abciQuery(
      conn,
      `${Q}ProviderWithdrawable`,
      QueryProviderWithdrawableRequest,
      QueryProviderWithdrawableResponse,
      req,
      signal,
    );
    addCoins(sums, res.amounts);
    leaseCount += res.leaseCount;
    failed.push(...res.failedLeaseUuids);
    const next = res.pagination?.nextKey ?? new Uint8Array();
    if (next.length === 0) return { amounts: coinsFromMap(sums), leaseCount, failedLeaseUuids: failed };
    if (Buffer.from(next).equals(Buffer.from(key)))
      throw new FredError("ERR_CHAIN_QUERY", "ProviderWithdrawable cursor did not advance");
    key = next;
  }
  throw new FredError("ERR_CHAIN_QUERY", `ProviderWithdrawable exceeded ${MAX_PAGES} pages`);
}

/** One page of one lease, any state: enough to tell whether the provider has a history. */
export async function hasLeaseHistory(
  conn: NodeConnection,
  providerUuid: string,
  signal?: AbortSignal,
): Promise<boolean> {
  requireUuid(providerUuid, "provider UUID");
  const res = await abciQuery(
    conn,
    `${Q}LeasesByProvider`,
    QueryLeasesByProviderRequest,
    QueryLeasesByProviderResponse,
    QueryLeasesByProviderRequest.fromPartial({ providerUuid, stateFilter: 0, pagination: { limit: 1n } }),
    signal,
  );
  return res.leases.length > 0;
}

export async function network(conn: NodeConnection, signal?: AbortSignal): Promise<string> {
  signal?.throwIfAborted();
  try {
    return (await conn.status()).network;
  } catch (err) {
    throw chainError(err, "status");
  }
}

export async function latestBlock(conn: NodeConnection, signal?: AbortSignal): Promise<BlockInfo> {
  signal?.throwIfAborted();
  try {
    const status = await conn.status();
    return { height: status.latestBlockHeight, time: status.latestBlockTime };
  } catch (err) {
    throw chainError(err, "status");
  }
}

// ---- protobuf billing types → the Chain port's plain domain shapes ----

function toDate(ts: Timestamp | undefined): Date | undefined {
  if (ts === undefined) return undefined;
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6));
}

export function toCoins(coins: readonly Coin[]): CoinAmount[] {
  return coins.map((c) => ({ denom: c.denom, amount: c.amount }));
}

// The port's LEASE_STATES list the chain's LeaseState names in number order (a test in
// test/chain/proto holds the two tables equal), so a state's number is its index there.
// A number the port does not know (a newer chain's state) reads as UNSPECIFIED.
function stateName(state: number): LeaseStateName {
  return LEASE_STATES[state] ?? "LEASE_STATE_UNSPECIFIED";
}

function stateNumber(name: LeaseStateName): number {
  return LEASE_STATES.indexOf(name);
}

function toChainLease(l: Lease): ChainLease {
  return {
    uuid: l.uuid,
    tenant: l.tenant,
    providerUuid: l.providerUuid,
    state: stateName(l.state),
    items: l.items.map((i) => ({
      skuUuid: i.skuUuid,
      quantity: i.quantity,
      serviceName: i.serviceName,
      customDomain: i.customDomain,
      lockedPrice:
        i.lockedPrice === undefined
          ? undefined
          : { denom: i.lockedPrice.denom, amount: i.lockedPrice.amount },
    })),
    metaHash: Buffer.from(l.metaHash).toString("hex"),
    createdAt: toDate(l.createdAt),
    closedAt: toDate(l.closedAt),
    lastSettledAt: toDate(l.lastSettledAt),
    acknowledgedAt: toDate(l.acknowledgedAt),
    rejectedAt: toDate(l.rejectedAt),
    expiredAt: toDate(l.expiredAt),
    rejectionReason: l.rejectionReason,
    closureReason: l.closureReason,
  };
}

/** Sums coin lists per denom (amounts are decimal strings of arbitrary size). */
function addCoins(into: Map<string, bigint>, coins: readonly Coin[]): void {
  for (const c of coins) into.set(c.denom, (into.get(c.denom) ?? 0n) + BigInt(c.amount || "0"));
}

function coinsFromMap(map: Map<string, bigint>): CoinAmount[] {
  return [...map.entries()]
    .filter(([, v]) => v > 0n)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([denom, v]) => ({ denom, amount: v.toString() }));
}
