import type { Clock } from "../core/clock.ts";
import type { BackendClient, BackendStats } from "./backend-client/index.ts";
import type { BackendConfig } from "./config/index.ts";

// Which backend gets a new lease: `Router` keeps what the choice needs (stats, in-flight
// counts, the round-robin counter) and asks `route`, the pure decision further down.

/**
 * The stateful shell around the pure routing decision: it keeps the latest `/stats`
 * reading per backend (dropped when stale or unreadable, so a silent backend falls back
 * to "no load signal"), the in-flight provision count per backend, and the round-robin
 * counter. The lifecycle calls `choose`, then `begin`/`end` around each provision.
 */
export interface RouterOptions {
  backends: readonly BackendConfig[];
  clock: Clock;
  /** A stats reading older than this is ignored (default 60 s). */
  statsMaxAgeMs?: number;
}

export class Router {
  readonly #backends: readonly BackendConfig[];
  readonly #clock: Clock;
  readonly #maxAgeMs: number;
  readonly #loads = new Map<string, { load: BackendLoad; at: number }>();
  readonly #inFlight = new Map<string, number>();
  #roundRobin = 0;
  /** Choices made round-robin because no matching backend had usable load figures (a metric). */
  fallbacks = 0;

  constructor(opts: RouterOptions) {
    this.#backends = opts.backends;
    this.#clock = opts.clock;
    this.#maxAgeMs = opts.statsMaxAgeMs ?? 60_000;
  }

  choose(sku: string): RouteDecision {
    const now = this.#clock.now();
    const loads = new Map<string, BackendLoad>();
    for (const [name, entry] of this.#loads) {
      if (now - entry.at <= this.#maxAgeMs) loads.set(name, entry.load);
    }
    const decision = route({
      sku,
      backends: this.#backends,
      loads,
      inFlight: this.#inFlight,
      roundRobin: this.#roundRobin,
    });
    this.#roundRobin = decision.roundRobin;
    if (decision.kind === "backend" && decision.unmeasured === true) this.fallbacks++;
    return decision;
  }

  begin(backend: string): void {
    this.#inFlight.set(backend, (this.#inFlight.get(backend) ?? 0) + 1);
  }

  end(backend: string): void {
    const n = (this.#inFlight.get(backend) ?? 0) - 1;
    if (n > 0) this.#inFlight.set(backend, n);
    else this.#inFlight.delete(backend);
  }

  inFlight(backend?: string): number {
    if (backend !== undefined) return this.#inFlight.get(backend) ?? 0;
    let total = 0;
    for (const n of this.#inFlight.values()) total += n;
    return total;
  }

  recordLoad(backend: string, load: BackendLoad | undefined): void {
    if (load === undefined) this.#loads.delete(backend);
    else this.#loads.set(backend, { load, at: this.#clock.now() });
  }

  /**
   * The `/stats` poll behind routing loads and `GET /v1/provider`: a round now, then one
   * `intervalMs` after each round ended (chained, never overlapping), each handed to
   * `onRound`. Returns the stop; a round in flight then finishes but schedules no other.
   */
  pollStats(
    clients: ReadonlyMap<string, BackendClient>,
    intervalMs: number,
    onRound: (readings: ReadonlyMap<string, BackendStats | undefined>) => void,
    signal: AbortSignal,
  ): () => void {
    let stopped = false;
    let cancel: (() => void) | undefined;
    const round = (): void => {
      void this.refreshLoads(clients, signal)
        .then(onRound)
        .finally(() => {
          if (!stopped && !signal.aborted) cancel = this.#clock.setTimer(intervalMs, round);
        });
    };
    round();
    return () => {
      stopped = true;
      cancel?.();
    };
  }

  /**
   * Reads `/stats` from every unfenced backend in parallel. A failed read removes that
   * backend's reading rather than keeping an old one. Returns what each read gave
   * (undefined: it failed), for the other readers of `/stats` (the tenant API's
   * `GET /v1/provider`), so the poll stays the only caller.
   */
  async refreshLoads(
    clients: ReadonlyMap<string, BackendClient>,
    signal?: AbortSignal,
  ): Promise<Map<string, BackendStats | undefined>> {
    const readings = new Map<string, BackendStats | undefined>();
    await Promise.all(
      this.#backends
        .filter((b) => !b.fenced)
        .map(async (b) => {
          const client = clients.get(b.name);
          let stats: BackendStats | undefined;
          try {
            stats = client === undefined ? undefined : await client.stats(signal);
          } catch {
            stats = undefined;
          }
          readings.set(b.name, stats);
          this.recordLoad(b.name, stats);
        }),
    );
    return readings;
  }
}

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
      /** Round-robin because none of the matching backends had usable load figures. */
      unmeasured?: true;
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
  if (withLoad.length === 0) return pickRoundRobin(open, roundRobin, true);

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

function pickRoundRobin(
  candidates: readonly RoutableBackend[],
  counter: number,
  unmeasured = false,
): RouteDecision {
  const index = ((counter % candidates.length) + candidates.length) % candidates.length;
  return {
    kind: "backend",
    backend: candidates[index]!.name,
    via: "round-robin",
    roundRobin: (counter + 1) % Number.MAX_SAFE_INTEGER,
    ...(unmeasured ? { unmeasured: true as const } : {}),
  };
}
