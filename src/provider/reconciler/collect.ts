import type { ChainLease } from "../../chain/port.ts";
import { readTerminalBudget } from "../../core/backend-contract/index.ts";
import { FredError } from "../../core/errors.ts";
import {
  type BackendView,
  budgetReads,
  type ChainLeaseView,
  type InventoryHalf,
  type PlacementView,
  type PlanInput,
  type ProvisionRow,
  pairInventories,
} from "../../core/reconcile/index.ts";
import { inventoryDeadline, sweepDeadline } from "./deadline.ts";
import type { SweepSources } from "./sources.ts";

/**
 * How long a backend's inventory read may go without a page before the sweep gives up on
 * it (silent this sweep). A page of 1,000 rows takes milliseconds, so a backend this slow
 * is hung or overloaded, and waiting longer would hold every other backend's leases too.
 */
export const INVENTORY_STALL_MS = 3_000;

/**
 * The sweep's collect phase: the chain's PENDING and ACTIVE leases of this provider (all
 * pages), each configured backend's two inventories read as a pair (given up on when no
 * page comes for `inventoryStallMs`), the terminal budget of failed ACTIVE workloads, and
 * the placement store. A chain listing that fails ends the sweep before anything is
 * planned; a backend that fails is silent.
 */
export interface Collected {
  input: PlanInput;
  /**
   * The listed PENDING leases, for the act phase (new work is provisioned from them). The
   * ACTIVE ones are reduced to their plan view as their pages arrive: the few an action needs
   * in full, the act phase re-reads (100,000 full leases were most of a sweep's heap).
   */
  pending: Map<string, ChainLease>;
}

export class ChainListingFailed extends FredError {
  constructor(cause: unknown) {
    super("ERR_RECONCILE_CHAIN_LISTING", "cannot list this provider's leases", { retryable: true, cause });
  }
}

export async function collect(
  d: SweepSources,
  deadlineMs: number,
  signal: AbortSignal,
  inventoryStallMs = INVENTORY_STALL_MS,
): Promise<Collected> {
  const now = d.clock.now();
  const [listed, reads] = await Promise.all([
    listChain(d, signal),
    Promise.all(
      d.config.backends.map(
        async (b) => [b.name, await readBackend(d, b.name, b.fenced, inventoryStallMs, signal)] as const,
      ),
    ),
  ]);
  const backends = new Map<string, BackendView>(reads);
  for (const [name, view] of backends) {
    if (view.kind !== "answered") continue;
    const counts = { provisions: view.provisions.size, retentions: view.retentions.size };
    d.fleet.recordBaseline(name, counts, d.clock.now());
  }
  const input: PlanInput = {
    now,
    chain: Array.from(listed.views.values()),
    backends,
    store: await storeView(d, listed.views),
    billingOnlySkus: new Set(d.config.billingOnlySkus),
    placementGraceMs: d.config.provisionCallbackTimeoutMs,
  };
  await readBudgets(d, input, deadlineMs, signal);
  return { input, pending: listed.pending };
}

/**
 * The plan's view of one listed lease; `customDomains` is left out when no item has one.
 * Leases naming the same SKUs share one frozen list (`skuLists`, keyed by the SKUs).
 */
function chainView(l: ChainLease, skuLists: Map<string, readonly string[]>): ChainLeaseView {
  const skus = l.items.map((i) => i.skuUuid);
  // A single-SKU lease (nearly all) is keyed by the SKU string itself: no string built per lease.
  const key = skus.length === 1 ? (skus[0] as string) : `\n${skus.join("\n")}`;
  let shared = skuLists.get(key);
  if (shared === undefined) {
    shared = Object.freeze(skus);
    skuLists.set(key, shared);
  }
  const view: ChainLeaseView = { uuid: l.uuid, state: l.state, skus: shared, metaHash: l.metaHash };
  if (l.items.some((i) => i.customDomain !== ""))
    view.customDomains = l.items
      .filter((i) => i.customDomain !== "")
      .map((i) => ({ service: i.serviceName, domain: i.customDomain }));
  return view;
}

/** Both listings, reduced page by page: every lease's plan view, and the PENDING leases in full. */
async function listChain(
  d: SweepSources,
  signal: AbortSignal,
): Promise<{ views: Map<string, ChainLeaseView>; pending: Map<string, ChainLease> }> {
  // By lease: a lease listed twice keeps its first place and its last listing.
  const views = new Map<string, ChainLeaseView>();
  const pending = new Map<string, ChainLease>();
  const skuLists = new Map<string, readonly string[]>();
  const reduce = (page: readonly ChainLease[]) => {
    for (const l of page) {
      views.set(l.uuid, chainView(l, skuLists));
      if (l.state === "LEASE_STATE_PENDING") pending.set(l.uuid, l);
      else pending.delete(l.uuid);
    }
  };
  try {
    // PENDING first: a lease acknowledged between the two reads shows up in ACTIVE as well.
    for (const state of ["LEASE_STATE_PENDING", "LEASE_STATE_ACTIVE"] as const)
      await d.chain.leasePagesByProvider(d.config.providerUuid, state, reduce, signal);
  } catch (err) {
    if (signal.aborted) throw err;
    throw new ChainListingFailed(err);
  }
  return { views, pending };
}

/** One backend's two inventory reads, paired at once (its rows are dropped while the listing runs). */
async function readBackend(
  d: SweepSources,
  name: string,
  fenced: boolean,
  stallMs: number,
  signal: AbortSignal,
): Promise<BackendView> {
  const client = d.clients.get(name);
  const pinned = d.fleet.pins().get(name);
  if (fenced || client === undefined || pinned === undefined) {
    return pairInventories({
      fenced: true,
      pinnedStorageId: "",
      provisions: UNREACHABLE,
      retentions: UNREACHABLE,
    });
  }
  let provisions: InventoryHalf<ProvisionRow> = UNREACHABLE;
  let retentions: InventoryHalf<string> = UNREACHABLE;
  try {
    // The client walks every page of both endpoints and checks each page's identity.
    const inv = await inventoryDeadline(d.clock, stallMs, signal, (s, progressed) =>
      client.inventory(s, progressed),
    );
    provisions = { kind: "read", storageId: inv.storageId, items: inv.provisions };
    retentions = { kind: "read", storageId: inv.storageId, items: inv.retentions };
  } catch (err) {
    if (signal.aborted) throw err;
    if (refused(err)) provisions = { kind: "rejected", positives: [] };
    d.logger.warn({ err, backend: name }, "reconciler: backend inventory unavailable; silent this sweep");
  }
  return pairInventories({ fenced: false, pinnedStorageId: pinned, provisions, retentions });
}

const UNREACHABLE = { kind: "unreachable" } as const;

/** A response that came back but was refused (another identity, malformed), not a transport failure. */
function refused(err: unknown): boolean {
  return (
    err instanceof FredError && (err.code === "ERR_BACKEND_IDENTITY" || err.code === "ERR_BACKEND_MALFORMED")
  );
}

/** Adds `terminal_budget.verdict` to failed ACTIVE workloads; a read that fails leaves it unknown. */
async function readBudgets(d: SweepSources, input: PlanInput, deadlineMs: number, signal: AbortSignal) {
  await Promise.all(
    budgetReads(input).map(async ({ lease, backend }) => {
      const view = input.backends.get(backend);
      const client = d.clients.get(backend);
      if (view?.kind !== "answered" || client === undefined) return;
      try {
        const info = await sweepDeadline(d.clock, deadlineMs, signal, (s) => client.provisionInfo(lease, s));
        const verdict = info === undefined ? undefined : readTerminalBudget(info)?.verdict;
        if (verdict === undefined) return;
        const obs = view.provisions.get(lease);
        if (obs !== undefined)
          (view.provisions as Map<string, typeof obs>).set(lease, { ...obs, terminalBudget: verdict });
      } catch (err) {
        if (signal.aborted) throw err;
        d.logger.warn({ err, backend, lease_uuid: lease }, "reconciler: terminal budget unreadable");
      }
    }),
  );
}

/**
 * The placement store as the plan reads it. A listed lease's record is keyed by the listing's
 * UUID string and owners by the configured names, so 100,000 records hold no copy of either.
 */
async function storeView(
  d: SweepSources,
  listed: ReadonlyMap<string, ChainLeaseView>,
): Promise<PlanInput["store"]> {
  const placements = new Map<string, PlacementView>();
  const names = new Map(d.config.backends.map((b) => [b.name, b.name]));
  d.store.eachPlacement(([uuid, state, owner, candidatesJson, updatedAt, noLifecycle]) => {
    // Parsed for every row, as the store's own reader does (a malformed one fails the sweep).
    const candidates = JSON.parse(candidatesJson) as string[];
    const lease = listed.get(uuid)?.uuid ?? uuid;
    placements.set(
      lease,
      state === "confirmed" && owner !== null
        ? noLifecycle === 1
          ? { kind: "confirmed", owner: names.get(owner) ?? owner, updatedAt, noLifecycle: true }
          : { kind: "confirmed", owner: names.get(owner) ?? owner, updatedAt }
        : state === "conflict"
          ? { kind: "quarantined", reason: "conflict", candidates, updatedAt }
          : { kind: "unusable", updatedAt },
    );
  });
  const attempts = new Map(
    d.store
      .unresolvedAttempts()
      .map((a) => [
        a.leaseUuid,
        { backend: a.backend, operationId: a.operationId, kind: a.kind, createdAt: a.createdAt },
      ]),
  );
  return {
    placements,
    attempts,
    payloads: new Set((await d.payloads?.leases()) ?? []),
    baseline: d.fleet.baselineMatches(d.config.backends.map((b) => b.name)),
    retiredBackends: new Set(),
    retirementUnproven: false,
    retained: new Map(
      d.store.retained
        .all()
        .map((r) => [
          r.leaseUuid,
          { owner: r.owner, misses: r.misses, restoring: r.restoreTarget !== undefined },
        ]),
    ),
  };
}
