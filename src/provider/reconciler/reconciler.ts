import type { Registry } from "prom-client";
import { retry } from "../../core/async/index.ts";
import { plan } from "../../core/reconcile/index.ts";
import { act } from "./act.ts";
import { collect } from "./collect.ts";
import { endLeasesOnLostBackends } from "./lost-backends.ts";
import { createReconcilerMetrics, type ReconcilerMetrics } from "./metrics.ts";
import { type InventoryReadiness, inventoryReadiness, READY_INVENTORY } from "./readiness.ts";
import type { LeaseWork, SweepSources } from "./sources.ts";

/**
 * providerd's reconciler: collect (chain, backends, placement store) → the pure `plan()` of
 * src/core/reconcile → act under each lease's serial queue. It runs at startup (once the feed
 * is live, repeated with backoff until every unfenced backend has answered), on every feed
 * resync and every reconciliation_interval (both through the lifecycle). Sweeps never overlap:
 * one requested while another runs is run once after it, however many asked.
 */
export interface ReconcilerDeps extends SweepSources {
  /** Where a sweep's lease work runs: each lease's serial queue, the one provision path. */
  lifecycle: LeaseWork;
  /** Resolves once the chain event feed is live (rejects when `signal` aborts). */
  feedLive: (signal: AbortSignal) => Promise<void>;
  registry?: Registry;
  /** Bound on each chain re-read and single backend read of a sweep (default 10 s). */
  readDeadlineMs?: number;
  /** A backend inventory read without a page for this long is abandoned (default INVENTORY_STALL_MS, 3 s). */
  inventoryStallMs?: number;
  /** Runs after each sweep's act phase (before the lost-backend pass): the retry of pending maintenance commands. */
  afterSweep?: (signal: AbortSignal) => Promise<void>;
  /** Wraps each whole sweep (providerd: V8's own heap growth while it runs, heap-policy.ts). */
  whileSweeping?: <T>(sweep: () => Promise<T>) => Promise<T>;
}

export type SweepOutcome = "complete" | "degraded" | "failed";

export interface SweepReport {
  outcome: SweepOutcome;
  /** Backends that answered both inventories. */
  answered: readonly string[];
  actions: number;
}

/** What the latest sweep did, for the operator dashboard (times in ms since the epoch). */
export interface SweepSummary {
  outcome: SweepOutcome;
  endedAt: number;
  durationMs: number;
  /** Planned actions by kind (act may have skipped some whose lease moved on). */
  actions: Readonly<Record<string, number>>;
  /** The end of the latest complete sweep, if any. */
  lastSuccessAt: number | undefined;
}

/** Startup sweeps: 1 s after one that left a backend unanswered, doubling up to 30 s. */
const STARTUP_BACKOFF = { initialMs: 1_000, maxMs: 30_000 };

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly metrics: ReconcilerMetrics;
  /** By backend: did it answer the latest sweep (fenced backends: false)? */
  readonly backendHealthy: Map<string, boolean>;
  #done = false;
  /** Whether the latest sweep heard from every unfenced backend. */
  #unfencedAnswered = false;
  #running: Promise<SweepReport> | undefined;
  #again: Promise<SweepReport> | undefined;
  /** By backend: did its latest health read answer? */
  readonly #health = new Map<string, boolean>();
  #healthSweep: Promise<unknown> | undefined;
  /** Unfenced backends that have answered a sweep since startup. */
  readonly #everAnswered = new Set<string>();
  #readiness: InventoryReadiness = READY_INVENTORY;
  #lastSweep: SweepSummary | undefined;

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
    this.metrics = createReconcilerMetrics(deps.registry);
    const backends = deps.config.backends;
    this.backendHealthy = new Map(backends.map((b) => [b.name, !b.fenced]));
  }

  /** True once a sweep has run in which every unfenced backend answered. */
  get done(): boolean {
    return this.#done;
  }

  /** The placement inventory's readiness after the latest sweep that listed the chain (for /readyz). */
  get inventoryReadiness(): InventoryReadiness {
    return this.#readiness;
  }

  /** The latest sweep's outcome, duration and actions (undefined before the first ends). */
  get lastSweep(): SweepSummary | undefined {
    return this.#lastSweep;
  }

  /** One sweep, or the one queued after the running sweep (never two at once). */
  sweep(signal: AbortSignal): Promise<SweepReport> {
    if (this.#running === undefined) return this.#start(signal);
    this.#again ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#again = undefined;
        return this.#start(signal);
      });
    return this.#again;
  }

  #start(signal: AbortSignal): Promise<SweepReport> {
    const around = this.#deps.whileSweeping;
    const run = (around === undefined ? this.#run(signal) : around(() => this.#run(signal))).finally(() => {
      this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #run(signal: AbortSignal): Promise<SweepReport> {
    const { lifecycle, config, clock, logger } = this.#deps;
    const deadlineMs = this.#deps.readDeadlineMs ?? 10_000;
    const end = this.metrics.duration.startTimer();
    const startedAt = clock.now();
    const actionKinds: Record<string, number> = {};
    let report: SweepReport;
    try {
      const { input, pending } = await collect(this.#deps, deadlineMs, signal, this.#deps.inventoryStallMs);
      const p = plan(input);
      for (const a of p.actions) actionKinds[a.kind] = (actionKinds[a.kind] ?? 0) + 1;
      for (const s of p.skips) this.metrics.skips.inc({ pass: s.pass, reason: s.reason });
      for (const name of this.backendHealthy.keys()) this.backendHealthy.set(name, p.answered.includes(name));
      const fencedSet = new Set(config.backends.filter((b) => b.fenced).map((b) => b.name));
      for (const name of p.answered) if (!fencedSet.has(name)) this.#everAnswered.add(name);
      this.#readiness = inventoryReadiness(input, this.#everAnswered, fencedSet);
      await act({ ...this.#deps, lifecycle, pending, metrics: this.metrics, deadlineMs, signal }, p);
      await this.#deps.afterSweep?.(signal).catch((err: unknown) => {
        if (!signal.aborted) logger.warn({ err }, "reconciler: pending maintenance pass failed");
      });
      await this.#endLost(signal);
      const fenced = [...fencedSet];
      const unfencedAnswered = config.backends.every((b) => b.fenced || p.answered.includes(b.name));
      if (unfencedAnswered) this.#done = true;
      report = {
        outcome: p.complete ? "complete" : "degraded",
        answered: p.answered,
        actions: p.actions.length,
      };
      logger.info(
        {
          outcome: report.outcome,
          answered: p.answered,
          fenced,
          actions: p.actions.length,
          skips: p.skips.length,
        },
        "reconciler sweep done",
      );
      this.#unfencedAnswered = unfencedAnswered;
    } catch (err) {
      if (signal.aborted) throw err;
      logger.warn({ err }, "reconciler sweep failed; nothing was acted on after the failure");
      report = { outcome: "failed", answered: [], actions: 0 };
      this.#unfencedAnswered = false;
    } finally {
      end();
    }
    this.metrics.runs.inc({ outcome: report.outcome });
    this.metrics.sweepComplete.set(report.outcome === "complete" ? 1 : 0);
    if (report.outcome === "complete") this.metrics.lastSuccess.set(clock.now() / 1000);
    const endedAt = clock.now();
    this.#lastSweep = {
      outcome: report.outcome,
      endedAt,
      durationMs: endedAt - startedAt,
      actions: actionKinds,
      lastSuccessAt: report.outcome === "complete" ? endedAt : this.#lastSweep?.lastSuccessAt,
    };
    return report;
  }

  /** The lost-backend pass (lost-backends.ts) after each sweep; its failure fails nothing else. */
  async #endLost(signal: AbortSignal): Promise<void> {
    try {
      const r = await endLeasesOnLostBackends(this.#deps, signal);
      if (r.closed.length + r.rejected.length + r.pruned.length + r.failed.length > 0)
        this.#deps.logger.info(r, "leases on lost backends");
    } catch (err) {
      if (!signal.aborted) this.#deps.logger.error({ err }, "lost-backend pass failed");
    }
  }

  /** One round of the routing `/stats` poll: each backend's read answered (stats) or not. */
  observeReadings(readings: ReadonlyMap<string, unknown>, signal: AbortSignal): void {
    for (const [name, stats] of readings) this.observeHealth(name, stats !== undefined, signal);
  }

  /**
   * A health read of `backend` (the routing loop's /stats) answered or not. When it answers
   * after failing, or the latest sweep did not hear from it, its deferred leases (failed
   * workloads, attempts to redeliver, recordless work) need not wait for the next interval:
   * one sweep runs now. Before the startup sweep completes, that sweep's own retries do it.
   */
  observeHealth(backend: string, answered: boolean, signal: AbortSignal): void {
    const before = this.#health.get(backend);
    this.#health.set(backend, answered);
    if (!answered || !this.#done || this.#healthSweep !== undefined) return;
    if (before !== false && this.backendHealthy.get(backend) !== false) return;
    this.#deps.logger.info({ backend }, "backend answers again; sweeping for the leases deferred for it");
    this.#healthSweep = this.sweep(signal)
      .catch(() => undefined)
      .finally(() => {
        this.#healthSweep = undefined;
      });
  }

  /** The startup sweep: once the feed is live, repeated until every unfenced backend answered. */
  async untilComplete(signal: AbortSignal): Promise<void> {
    const incomplete = new Error("a backend did not answer the reconciler sweep");
    await retry(
      async () => {
        // A resync or periodic sweep may have completed meanwhile.
        if (this.#done) return;
        await this.#deps.feedLive(signal);
        await this.sweep(signal);
        if (!this.#unfencedAnswered) throw incomplete;
      },
      {
        clock: this.#deps.clock,
        backoff: STARTUP_BACKOFF,
        signal,
        retryable: () => true,
        onRetry: (err) => {
          if (err !== incomplete) this.#deps.logger.warn({ err }, "startup sweep failed; retrying");
        },
      },
    );
  }
}
