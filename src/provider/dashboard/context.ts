import { Coalescer } from "../../core/async/index.ts";
import type { BackendStats } from "../backend-client/index.ts";
import { DashboardActivity, quantile } from "./activity.ts";
import { ChainView, MAX_LEASE_ROWS } from "./chain-view.ts";
import { metricByLabel, metricSum } from "./registry-reads.ts";
import { type Sample, SampleRing } from "./sample-ring.ts";
import type { DashboardSources, OwnerReads, StatsReading } from "./sources.ts";

/**
 * The dashboard's state, built once by providerd's composition root: the sources it reads,
 * the memoized chain view, the activity tap, the sample ring, each backend's latest
 * `/stats` reading (from the routing poll, never a call per view) and a memo of the
 * placement store's per-backend counts.
 */
export interface DashboardContextOptions {
  /** The sample ring's step (tests only; a minute otherwise). */
  sampleStepMs?: number;
  /** How long a chain read is reused (default 15 s). */
  chainTtlMs?: number;
  /** The tap made before the lifecycle it observes (one is made when absent). */
  activity?: DashboardActivity;
}

export interface StoreTally {
  /** Confirmed placements by owning backend. */
  byBackend: ReadonlyMap<string, number>;
  /** Lease UUID → owner and state, for the lease list. */
  records: ReadonlyMap<string, { owner: string | undefined; state: "confirmed" | "conflict" }>;
  asOfMs: number;
}

/** Records kept in the lease list's memo at most (as many as the chain rows). */
const MAX_TALLY_RECORDS = MAX_LEASE_ROWS;

export class DashboardContext {
  readonly s: DashboardSources;
  readonly startedAtMs: number;
  readonly chain: ChainView;
  readonly activity: DashboardActivity;
  readonly ring: SampleRing;
  readonly #stats = new Map<string, StatsReading>();
  readonly #tally: Coalescer<StoreTally>;
  readonly #ownerReads: Coalescer<OwnerReads>;
  #withdrawnTotal = 0;
  #lastWithdrawalAtMs: number | undefined;

  constructor(s: DashboardSources, o: DashboardContextOptions = {}) {
    this.s = s;
    this.startedAtMs = s.clock.now();
    this.chain = new ChainView({
      chain: s.chain,
      providerUuid: s.config.providerUuid,
      clock: s.clock,
      logger: s.logger,
      ...(o.chainTtlMs === undefined ? {} : { ttlMs: o.chainTtlMs }),
    });
    this.activity = o.activity ?? new DashboardActivity(s.clock);
    this.#tally = new Coalescer({ clock: s.clock, ttlMs: 10_000, maxEntries: 1 });
    this.#ownerReads = new Coalescer({ clock: s.clock, ttlMs: 10_000, maxEntries: 256 });
    this.ring = new SampleRing({
      clock: s.clock,
      ...(o.sampleStepMs === undefined ? {} : { stepMs: o.sampleStepMs }),
      take: (stepMs) => this.#sample(stepMs),
      onError: (err) => s.logger.warn({ err }, "dashboard: a sample failed; the step is skipped"),
    });
  }

  /** One round of the routing `/stats` poll. */
  recordStats(readings: ReadonlyMap<string, BackendStats | undefined>): void {
    const atMs = this.s.clock.now();
    for (const [name, stats] of readings) this.#stats.set(name, { stats, atMs });
  }

  stats(backend: string): StatsReading | undefined {
    return this.#stats.get(backend);
  }

  /** A lease's reads on its owner backend, reused for 10 s (page views add no backend load). */
  ownerReads(uuid: string, owner: string | undefined, read: () => Promise<OwnerReads>): Promise<OwnerReads> {
    return this.#ownerReads.get(`${uuid}/${owner ?? ""}`, read);
  }

  storeTally(): Promise<StoreTally> {
    return this.#tally.get("all", async () => {
      const byBackend = new Map<string, number>();
      const records = new Map<string, { owner: string | undefined; state: "confirmed" | "conflict" }>();
      this.s.store.eachPlacement(([lease, state, owner]) => {
        if (state === "confirmed" && owner !== null) byBackend.set(owner, (byBackend.get(owner) ?? 0) + 1);
        if (records.size < MAX_TALLY_RECORDS) records.set(lease, { owner: owner ?? undefined, state });
      });
      return { byBackend, records, asOfMs: this.s.clock.now() };
    });
  }

  /** Withdrawn since start by denom, noting when the total last grew (the latest withdrawal seen). */
  async withdrawn(): Promise<{ byDenom: Map<string, number>; lastAtMs: number | undefined }> {
    const byDenom = await metricByLabel(this.s.registry, "fred_withdrawn_amount_total", "denom");
    let total = 0;
    for (const v of byDenom.values()) total += v;
    if (total > this.#withdrawnTotal) {
      this.#withdrawnTotal = total;
      this.#lastWithdrawalAtMs = this.s.clock.now();
    }
    return { byDenom, lastAtMs: this.#lastWithdrawalAtMs };
  }

  creditCloses(): Promise<number> {
    return metricSum(this.s.registry, "fred_credit_closures_total");
  }

  start(): void {
    this.ring.start();
  }

  stop(): void {
    this.ring.stop();
    this.chain.close();
  }

  async #sample(stepMs: number): Promise<Omit<Sample, "t">> {
    const step = this.activity.takeStep();
    const seconds = stepMs / 1000;
    const { byDenom } = await this.withdrawn();
    return {
      leasesActive: this.s.store.counts().placements,
      provisionsPerMinute: step.provisions / (seconds / 60),
      latencyP50: quantile(step.latencies, 0.5),
      latencyP99: quantile(step.latencies, 0.99),
      apiRequestsPerSecond: step.apiRequests / seconds,
      apiErrorsPerSecond: step.apiErrors / seconds,
      earnings: Object.fromEntries(byDenom),
      creditCloses: await this.creditCloses(),
    };
  }
}
