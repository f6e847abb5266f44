import { classifyState, isBillingOnlyLease, mergeListings } from "./chain-state.ts";
import type { BackendView, CustomDomain, PlanInput, ProvisionObservation } from "./types.ts";

/**
 * The collector's gates, pure: how one backend's two inventory reads become the plan's
 * BackendView, and which failed workloads need their terminal budget read. The collector
 * does the I/O and hands the results here.
 */

/** One endpoint's walk (every page), as the collector ended it. */
export type InventoryHalf<T> =
  /** Every page read; `storageId` is the identity every page carried. */
  | { kind: "read"; storageId: string; items: readonly T[] }
  /** Nothing usable came back: transport error, timeout, open circuit, 5xx. */
  | { kind: "unreachable" }
  /**
   * The response was refused: malformed, or another storage identity than the pin. `positives`
   * are the lease UUIDs it named before it was refused (raw membership, never ownership).
   */
  | { kind: "rejected"; positives: readonly string[] };

export interface ProvisionRow {
  leaseUuid: string;
  status: string;
  /** The custom domains the row reports applied; undefined when it does not report them. */
  customDomains?: readonly CustomDomain[];
}

export interface PairInput {
  fenced: boolean;
  /** The storage identity pinned for this backend in the placement store. */
  pinnedStorageId: string;
  provisions: InventoryHalf<ProvisionRow>;
  retentions: InventoryHalf<string>;
}

/**
 * Both halves must be read from the pinned identity for the backend to count as answered.
 * A half that was refused, or an identity other than the pin, rejects the whole response, and
 * whatever either half named survives only as untrusted membership. A half that could not be
 * read makes the backend silent for this sweep, and nothing it returned is used (silence is
 * no evidence, in either direction). Within an answered pair, a lease in both endpoints, or
 * listed twice in /provisions, is untrusted there, while its siblings keep their evidence.
 */
export function pairInventories(input: PairInput): BackendView {
  const none = new Set<string>();
  if (input.fenced) return { kind: "silent", reason: "fenced", untrusted: none };
  const { provisions: p, retentions: r } = input;
  const identityOk = (h: InventoryHalf<unknown>) =>
    h.kind !== "read" || h.storageId === input.pinnedStorageId;
  if (p.kind === "rejected" || r.kind === "rejected" || !identityOk(p) || !identityOk(r)) {
    const raw = [...named(p, (row) => row.leaseUuid), ...named(r, (lease) => lease)];
    return { kind: "silent", reason: "rejected", untrusted: new Set(raw) };
  }
  if (p.kind !== "read" || r.kind !== "read")
    return { kind: "silent", reason: "unreachable", untrusted: none };
  const provisions = new Map<string, ProvisionObservation>();
  const untrusted = new Set<string>();
  const shared = new Map<string, ProvisionObservation>();
  for (const row of p.items) {
    if (provisions.has(row.leaseUuid)) untrusted.add(row.leaseUuid);
    provisions.set(row.leaseUuid, observation(row, shared));
  }
  const retentions = new Set(r.items);
  for (const lease of retentions) if (provisions.has(lease)) untrusted.add(lease);
  return { kind: "answered", provisions, retentions, untrusted };
}

/**
 * A row's observation. Rows reporting no custom domain (nearly all) share one frozen
 * observation per status and form, so a 100,000-row inventory holds a handful of them.
 */
function observation(row: ProvisionRow, shared: Map<string, ProvisionObservation>): ProvisionObservation {
  const domains = row.customDomains;
  if (domains !== undefined && domains.length > 0) return { status: row.status, customDomains: domains };
  const form = `${domains === undefined ? "-" : "0"}${row.status}`;
  let obs = shared.get(form);
  if (obs === undefined) {
    obs = Object.freeze(
      domains === undefined ? { status: row.status } : { status: row.status, customDomains: NO_DOMAINS },
    );
    shared.set(form, obs);
  }
  return obs;
}

const NO_DOMAINS: readonly CustomDomain[] = Object.freeze([]);

function named<T>(half: InventoryHalf<T>, lease: (item: T) => string): string[] {
  if (half.kind === "read") return half.items.map(lease);
  return half.kind === "rejected" ? [...half.positives] : [];
}

/**
 * The failed workloads of ACTIVE leases whose `terminal_budget` the collector must read
 * (GET /provisions/{uuid} on that backend) before planning, since only an exhausted budget
 * closes such a lease. Billing-only leases are never closed for a provisioning reason, so
 * they are left out.
 */
export function budgetReads(input: PlanInput): { lease: string; backend: string }[] {
  const out: { lease: string; backend: string }[] = [];
  // Usually no backend reports a failed workload: then the listings need not be merged.
  if (![...input.backends.values()].some(reportsFailed)) return out;
  for (const lease of mergeListings(input.chain).values()) {
    if (classifyState(lease.state) !== "active") continue;
    if (isBillingOnlyLease(lease, input.billingOnlySkus)) continue;
    for (const [backend, view] of input.backends) {
      if (view.kind !== "answered" || view.untrusted.has(lease.uuid)) continue;
      if (view.provisions.get(lease.uuid)?.status === "failed") out.push({ lease: lease.uuid, backend });
    }
  }
  return out;
}

function reportsFailed(view: BackendView): boolean {
  if (view.kind !== "answered") return false;
  for (const obs of view.provisions.values()) if (obs.status === "failed") return true;
  return false;
}
