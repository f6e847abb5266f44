import {
  type InstanceHistoryBody,
  type InstanceUsageBody,
  type LeaseUsageRow,
  USAGE_HISTORY_MAX,
  USAGE_HISTORY_METRICS,
  type UsageBody,
} from "../../../core/backend-contract/index.ts";
import type { Clock } from "../../../core/clock.ts";
import type { Logger } from "../../../log.ts";
import { PeriodicPass } from "../periodic-pass.ts";
import type { InstanceSample, Substrate } from "../substrate.ts";
import { SampleRing } from "./ring.ts";

/**
 * The backend's usage sampler: every interval, one `substrate.sampleUsage` pass over all
 * leases, each instance's sample pushed on a ring of the last hour. Memory is bounded by
 * what runs: a lease or instance missing from a complete pass is forgotten at once, and a
 * ring never grows past its capacity (see ring.ts for the bytes). The route reads the
 * rings; it never waits on the substrate, so a slow engine delays samples, not answers.
 */
export const DEFAULT_USAGE_SAMPLE_INTERVAL_MS = 10_000;
const HOUR_MS = 3_600_000;

interface InstanceState {
  ring: SampleRing;
  latest: InstanceSample;
  latestAtMs: number;
  cpuCores: number | undefined;
}

export interface UsageSamplerOptions {
  /** The substrate's `sampleUsage`. */
  sample: NonNullable<Substrate["sampleUsage"]>;
  clock: Clock;
  intervalMs: number;
  logger: Logger;
}

export class UsageSampler {
  readonly #options: UsageSamplerOptions;
  readonly #pass: PeriodicPass;
  /** lease UUID → "<service>/<index>" → state. */
  readonly #leases = new Map<string, Map<string, InstanceState>>();
  readonly capacity: number;

  constructor(options: UsageSamplerOptions) {
    this.#options = options;
    this.capacity = Math.min(USAGE_HISTORY_MAX, Math.ceil(HOUR_MS / options.intervalMs));
    const log = options.logger.child({ component: "usage-sampler" });
    this.#pass = new PeriodicPass({
      clock: options.clock,
      intervalMs: () => options.intervalMs,
      run: (signal) => this.#sample(signal),
      onError: (err) => log.warn({ err }, "usage sampling pass failed; the previous samples stay"),
    });
  }

  start(): void {
    this.#pass.start();
  }

  stop(): Promise<void> {
    return this.#pass.stop();
  }

  /** One pass now (joined if one is running). */
  sampleNow(): Promise<void> {
    return this.#pass.run();
  }

  /** How many leases have samples (what the memory bound counts). */
  get leaseCount(): number {
    return this.#leases.size;
  }

  /** Disk used and quota summed over every sampled instance's volume, as of the last pass. */
  volumeTotals(): { usedBytes: number; quotaBytes: number } {
    let usedBytes = 0;
    let quotaBytes = 0;
    for (const instances of this.#leases.values())
      for (const { latest } of instances.values()) {
        usedBytes += latest.diskBytes ?? 0;
        quotaBytes += latest.diskQuotaBytes ?? 0;
      }
    return { usedBytes, quotaBytes };
  }

  async #sample(signal: AbortSignal): Promise<void> {
    const samples = await this.#options.sample(signal);
    const atMs = this.#options.clock.now();
    for (const lease of this.#leases.keys()) if (!samples.has(lease)) this.#leases.delete(lease);
    for (const [lease, instances] of samples) {
      const known = this.#leases.get(lease) ?? new Map<string, InstanceState>();
      const seen = new Set<string>();
      for (const sample of instances) {
        const key = `${sample.service}/${sample.index}`;
        seen.add(key);
        const state = known.get(key);
        const cpuCores = state === undefined ? undefined : coresBetween(state, sample, atMs);
        const ring = state?.ring ?? new SampleRing(this.capacity);
        ring.push(atMs, [
          cpuCores,
          sample.memoryBytes,
          sample.networkRxBytes,
          sample.networkTxBytes,
          sample.diskBytes,
        ]);
        known.set(key, { ring, latest: sample, latestAtMs: atMs, cpuCores });
      }
      for (const key of known.keys()) if (!seen.has(key)) known.delete(key);
      if (known.size > 0) this.#leases.set(lease, known);
      else this.#leases.delete(lease);
    }
  }

  /**
   * Up to `limit` sampled leases after `after` in lease UUID order, each instance's current
   * figures (the `GET /usage` page's rows). Sorting the keys costs O(n log n) per page;
   * at 10,000 leases that is a few milliseconds, answered from memory.
   */
  currentPage(after: string | undefined, limit: number): LeaseUsageRow[] {
    const leases = [...this.#leases.keys()].filter((l) => after === undefined || l > after).sort();
    return leases.slice(0, limit).map((lease_uuid) => ({
      lease_uuid,
      instances: [...(this.#leases.get(lease_uuid)?.values() ?? [])].sort(byInstance).map(current),
    }));
  }

  get sampleIntervalSeconds(): number {
    return this.#options.intervalMs / 1000;
  }

  /** The `GET /usage/{uuid}` body: empty lists when nothing of the lease was sampled yet. */
  read(leaseUuid: string): UsageBody {
    const states = [...(this.#leases.get(leaseUuid)?.values() ?? [])].sort(byInstance);
    // One pass samples every instance at the same instant, so the instances share
    // timestamps; one that was not there at some pass gets null there.
    const times = new Set<number>();
    for (const s of states) for (const { atMs } of s.ring.samples()) times.add(atMs);
    const timeline = [...times].sort((a, b) => a - b).slice(-this.capacity);
    const slot = new Map(timeline.map((t, i) => [t, i]));
    const history: InstanceHistoryBody[] = states.map((s) => {
      const out = {
        service: s.latest.service,
        instance: s.latest.index,
        ...Object.fromEntries(
          USAGE_HISTORY_METRICS.map((m) => [m, new Array<number | null>(timeline.length).fill(null)]),
        ),
      } as InstanceHistoryBody;
      for (const sample of s.ring.samples()) {
        const i = slot.get(sample.atMs);
        if (i === undefined) continue;
        USAGE_HISTORY_METRICS.forEach((m, k) => {
          (out[m] as (number | null)[])[i] = rounded(sample.value(k), m === "cpu_cores" ? 4 : 0);
        });
      }
      return out;
    });
    return {
      sample_interval_seconds: this.#options.intervalMs / 1000,
      instances: states.map(current),
      history: { timestamps: timeline.map(iso), instances: history },
    };
  }
}

const byInstance = (a: InstanceState, b: InstanceState) =>
  a.latest.service.localeCompare(b.latest.service) || a.latest.index - b.latest.index;

/** Average cores since the previous sample of the same run; undefined across a restart. */
function coresBetween(prev: InstanceState, sample: InstanceSample, atMs: number): number | undefined {
  const seconds = (atMs - prev.latestAtMs) / 1000;
  const used = sample.cpuUsageSeconds - prev.latest.cpuUsageSeconds;
  if (seconds <= 0 || used < 0 || sample.startedAtMs !== prev.latest.startedAtMs) return undefined;
  return used / seconds;
}

function current(s: InstanceState): InstanceUsageBody {
  const x = s.latest;
  return {
    service: x.service,
    instance: x.index,
    sampled_at: iso(s.latestAtMs),
    cpu_cores: s.cpuCores === undefined ? null : rounded(s.cpuCores, 4),
    cpu_limit_cores: x.cpuLimitCores ?? null,
    cpu_throttled_seconds: rounded(x.cpuThrottledSeconds, 3) ?? 0,
    memory_bytes: x.memoryBytes,
    memory_limit_bytes: x.memoryLimitBytes ?? null,
    network_rx_bytes: x.networkRxBytes,
    network_tx_bytes: x.networkTxBytes,
    disk_bytes: x.diskBytes ?? null,
    disk_quota_bytes: x.diskQuotaBytes ?? null,
    restarts: x.restarts,
    started_at: x.startedAtMs === undefined ? null : iso(x.startedAtMs),
    uptime_seconds:
      x.startedAtMs === undefined ? null : Math.max(0, Math.round((s.latestAtMs - x.startedAtMs) / 1000)),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

function rounded(v: number | undefined, digits: number): number | null {
  if (v === undefined || !Number.isFinite(v) || v < 0) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
