/**
 * Which backend receives a new lease. Pure: the caller supplies the topology, the
 * latest `/stats` reading per backend, in-flight provision counts and the round-robin
 * counter, and gets back the decision plus the counter to keep.
 *
 * Rules (README seed "backend routing", issue 8 §3):
 * - a backend serves exactly the SKU UUIDs it lists; a SKU nobody lists goes to the
 *   `default: true` backend, or the first configured one;
 * - fenced and draining backends take no new leases (a fenced or draining fallback
 *   means the lease is not routed at all);
 * - several matches: backends not reporting `disk_withheld` first, then the lowest
 *   allocated/total CPU ratio, then the fewest in-flight provisions, then round-robin;
 *   with no usable stats among the matches, plain round-robin.
 */
export interface RoutableBackend {
  name: string;
  skus: readonly string[];
  isDefault: boolean;
  fenced: boolean;
  draining: boolean;
}

export interface BackendLoad {
  allocatedCpuCores: number;
  totalCpuCores: number;
  diskWithheld: boolean;
}

export interface RouteInput {
  /** Routing uses the lease's first item's SKU. */
  sku: string;
  backends: readonly RoutableBackend[];
  /** Latest stats by backend name; absent or unusable = no load signal. */
  loads?: ReadonlyMap<string, BackendLoad>;
  /** In-flight provisions by backend name (absent = 0). */
  inFlight?: ReadonlyMap<string, number>;
  roundRobin: number;
}

export type RouteDecision =
  | {
      kind: "backend";
      backend: string;
      via: "only-match" | "fallback" | "load" | "round-robin";
      roundRobin: number;
    }
  | {
      kind: "unroutable";
      reason: "no-backends" | "fallback-unavailable" | "all-matches-unavailable";
      roundRobin: number;
    };

/** What a backend may receive, by its operator flags. */
export interface BackendPermissions {
  newLeases: boolean;
  /** Deprovision, reads, inventories, redelivery of existing attempts. */
  otherRequests: boolean;
  callbacks: boolean;
}

export function backendPermissions(b: Pick<RoutableBackend, "fenced" | "draining">): BackendPermissions {
  if (b.fenced) return { newLeases: false, otherRequests: false, callbacks: false };
  if (b.draining) return { newLeases: false, otherRequests: true, callbacks: true };
  return { newLeases: true, otherRequests: true, callbacks: true };
}

function usableLoad(load: BackendLoad | undefined): load is BackendLoad {
  return (
    load !== undefined &&
    Number.isFinite(load.allocatedCpuCores) &&
    Number.isFinite(load.totalCpuCores) &&
    load.totalCpuCores > 0 &&
    load.allocatedCpuCores >= 0
  );
}

export function route(input: RouteInput): RouteDecision {
  const { backends, roundRobin } = input;
  if (backends.length === 0) return { kind: "unroutable", reason: "no-backends", roundRobin };
  const matching = backends.filter((b) => b.skus.includes(input.sku));
  if (matching.length === 0) {
    const fallback = backends.find((b) => b.isDefault) ?? backends[0]!;
    if (!backendPermissions(fallback).newLeases) {
      return { kind: "unroutable", reason: "fallback-unavailable", roundRobin };
    }
    return { kind: "backend", backend: fallback.name, via: "fallback", roundRobin };
  }
  const open = matching.filter((b) => backendPermissions(b).newLeases);
  if (open.length === 0) return { kind: "unroutable", reason: "all-matches-unavailable", roundRobin };
  if (open.length === 1) return { kind: "backend", backend: open[0]!.name, via: "only-match", roundRobin };

  const withLoad = open.filter((b) => usableLoad(input.loads?.get(b.name)));
  if (withLoad.length === 0) return pickRoundRobin(open, roundRobin);

  const key = (b: RoutableBackend) => {
    const load = input.loads?.get(b.name);
    const usable = usableLoad(load);
    return {
      withheld: usable && load.diskWithheld ? 1 : 0,
      // Backends without a usable reading rank after every measured one.
      ratio: usable ? load.allocatedCpuCores / load.totalCpuCores : Number.POSITIVE_INFINITY,
      inFlight: input.inFlight?.get(b.name) ?? 0,
    };
  };
  const keyed = open.map((b) => ({ b, k: key(b) }));
  const best = keyed.reduce((acc, cur) => (compare(cur.k, acc.k) < 0 ? cur : acc)).k;
  const tied = keyed.filter((x) => compare(x.k, best) === 0).map((x) => x.b);
  if (tied.length === 1) return { kind: "backend", backend: tied[0]!.name, via: "load", roundRobin };
  return pickRoundRobin(tied, roundRobin);
}

function compare(
  a: { withheld: number; ratio: number; inFlight: number },
  b: { withheld: number; ratio: number; inFlight: number },
) {
  if (a.withheld !== b.withheld) return a.withheld - b.withheld;
  if (a.ratio !== b.ratio) return a.ratio < b.ratio ? -1 : 1;
  return a.inFlight - b.inFlight;
}

function pickRoundRobin(candidates: readonly RoutableBackend[], counter: number): RouteDecision {
  const index = ((counter % candidates.length) + candidates.length) % candidates.length;
  return {
    kind: "backend",
    backend: candidates[index]!.name,
    via: "round-robin",
    roundRobin: (counter + 1) % Number.MAX_SAFE_INTEGER,
  };
}
