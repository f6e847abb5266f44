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
  /**
   * While new leases are routed on the readings, the poll reads `/stats` again this soon
   * after its last round (default 1 s) instead of waiting its interval.
   */
  rereadWhileRoutingMs?: number;
}

export class Router {
  readonly #backends: readonly BackendConfig[];
  readonly #clock: Clock;
  readonly #maxAgeMs: number;
  readonly #loads = new Map<string, { load: BackendLoad; at: number }>();
  readonly #inFlight = new Map<string, number>();
  readonly #rereadMs: number;
  #roundRobin = 0;
  /** A choice was made on the readings since the poll's current or last round began. */
  #choseOnReadings = false;
  /** Asks the poll for an early round (set while `pollStats` runs). */
  #hasten: (() => void) | undefined;
  /** Choices made round-robin because no matching backend had usable load figures (a metric). */
  fallbacks = 0;

  constructor(opts: RouterOptions) {
    this.#backends = opts.backends;
    this.#clock = opts.clock;
    this.#maxAgeMs = opts.statsMaxAgeMs ?? 60_000;
    this.#rereadMs = opts.rereadWhileRoutingMs ?? 1_000;
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
    // A reading does not count what was routed after it: a burst routed on one reading for
    // the poll's whole interval would go to one backend. Have it read again soon.
    if (decision.kind === "backend" && (decision.via === "load" || decision.via === "round-robin")) {
      // Round-robin among ties is a choice on the readings too; unmeasured, there were none.
      if (decision.unmeasured !== true) {
        this.#choseOnReadings = true;
        this.#hasten?.();
      }
    }
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
   * `onRound`. While leases are routed on the readings, the next round comes
   * `rereadWhileRoutingMs` after the last one ended instead, so a burst is spread on
   * readings at most that old (a reading counts what each backend admitted by then).
   * Returns the stop; a round in flight then finishes but schedules no other.
   */
  pollStats(
    clients: ReadonlyMap<string, BackendClient>,
    intervalMs: number,
    onRound: (readings: ReadonlyMap<string, BackendStats | undefined>) => void,
    signal: AbortSignal,
  ): () => void {
    let stopped = false;
    let running = false;
    let hastened = false;
    let lastEnd = this.#clock.now();
    let cancel: (() => void) | undefined;
    const schedule = (ms: number): void => {
      cancel?.();
      cancel = this.#clock.setTimer(ms, round);
    };
    const round = (): void => {
      running = true;
      hastened = false;
      this.#choseOnReadings = false;
      void this.refreshLoads(clients, signal)
        .then(onRound)
        .finally(() => {
          running = false;
          lastEnd = this.#clock.now();
          if (stopped || signal.aborted) return;
          // Choices made while this round read may be missing from what it read.
          hastened = this.#choseOnReadings;
          schedule(hastened ? this.#rereadMs : intervalMs);
        });
    };
    this.#hasten = () => {
      if (stopped || running || hastened) return;
      hastened = true;
      schedule(Math.max(0, lastEnd + this.#rereadMs - this.#clock.now()));
    };
    round();
    return () => {
      stopped = true;
      this.#hasten = undefined;
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
