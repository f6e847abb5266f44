import type { Clock } from "../core/clock.ts";
import { type BackendLoad, type RouteDecision, route } from "../core/routing.ts";
import type { BackendClient, BackendStats } from "./backend-client/index.ts";
import type { BackendConfig } from "./config/index.ts";

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
