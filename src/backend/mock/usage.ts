import { createHash } from "node:crypto";
import type { Clock } from "../../core/clock.ts";
import type { InstanceSample, SkuProfile } from "../kit/index.ts";

/**
 * The mock's synthetic usage: deterministic numbers that move with time, so the kit's
 * sampler, providerd's route and the CLI can be tested without Docker. Each instance
 * gets a fixed share of its SKU (from a hash of lease, service and index) and counters
 * that grow at fixed rates from its start; `drive` (the `/_mock/usage` route) sets a
 * lease's CPU demand or adds disk bytes, the way a busy loop or a write would.
 */
export interface MockInstanceView {
  service: string;
  index: number;
  sku: string;
}

export interface MockRunningWorkload {
  leaseUuid: string;
  instances: readonly MockInstanceView[];
  startedAtMs: number;
  restarts: number;
}

/** What a test asks of a lease: CPU demand in cores (may exceed the SKU: the excess is throttled), extra disk bytes. */
export interface UsageDrive {
  cpuCores?: number;
  diskBytes?: number;
}

interface Counters {
  startedAtMs: number;
  atMs: number;
  cpuSeconds: number;
  throttledSeconds: number;
  rxBytes: number;
  txBytes: number;
}

const MiB = 1024 * 1024;

export class MockUsage {
  readonly #counters = new Map<string, Counters>();
  readonly #drives = new Map<string, UsageDrive>();

  constructor(
    private readonly clock: Clock,
    private readonly profileOf: (sku: string) => SkuProfile | undefined,
  ) {}

  drive(leaseUuid: string, drive: UsageDrive): void {
    this.#drives.set(leaseUuid, { ...this.#drives.get(leaseUuid), ...drive });
  }

  /** One pass over the running workloads; counters of anything not running are dropped. */
  sample(running: readonly MockRunningWorkload[]): Map<string, InstanceSample[]> {
    const now = this.clock.now();
    const out = new Map<string, InstanceSample[]>();
    const live = new Set<string>();
    for (const w of running) {
      const drive = this.#drives.get(w.leaseUuid) ?? {};
      out.set(
        w.leaseUuid,
        w.instances.map((i) => {
          const key = `${w.leaseUuid}/${i.service}/${i.index}`;
          live.add(key);
          return this.#instance(key, i, w, drive, now);
        }),
      );
    }
    for (const key of this.#counters.keys()) if (!live.has(key)) this.#counters.delete(key);
    for (const lease of this.#drives.keys()) if (!out.has(lease)) this.#drives.delete(lease);
    return out;
  }

  #instance(
    key: string,
    i: MockInstanceView,
    w: MockRunningWorkload,
    drive: UsageDrive,
    now: number,
  ): InstanceSample {
    const profile = this.profileOf(i.sku) ?? { cpu_cores: 0.5, memory_mb: 512, disk_mb: 0 };
    const share = shareOf(key);
    let c = this.#counters.get(key);
    if (c === undefined || c.startedAtMs !== w.startedAtMs) {
      c = {
        startedAtMs: w.startedAtMs,
        atMs: w.startedAtMs,
        cpuSeconds: 0,
        throttledSeconds: 0,
        rxBytes: 0,
        txBytes: 0,
      };
      this.#counters.set(key, c);
    }
    const seconds = Math.max(0, (now - c.atMs) / 1000);
    const demand = drive.cpuCores ?? profile.cpu_cores * (0.1 + 0.3 * share);
    c.cpuSeconds += Math.min(demand, profile.cpu_cores) * seconds;
    c.throttledSeconds += Math.max(0, demand - profile.cpu_cores) * seconds;
    c.rxBytes += Math.round((1000 + 9000 * share) * seconds);
    c.txBytes += Math.round((500 + 4500 * share) * seconds);
    c.atMs = now;
    const limit = profile.memory_mb * MiB;
    const uptimeMinutes = (now - w.startedAtMs) / 60_000;
    // A slow wave over five minutes around a fixed share of the limit.
    const memory = Math.round(
      limit * (0.2 + 0.1 * share + 0.05 * Math.sin((uptimeMinutes / 5) * 2 * Math.PI)),
    );
    const quota = profile.disk_mb > 0 ? profile.disk_mb * MiB : undefined;
    const disk =
      quota === undefined
        ? undefined
        : Math.min(
            quota,
            Math.round(MiB * (1 + 4 * share) + 64 * 1024 * uptimeMinutes + (drive.diskBytes ?? 0)),
          );
    return {
      service: i.service,
      index: i.index,
      cpuUsageSeconds: c.cpuSeconds,
      cpuThrottledSeconds: c.throttledSeconds,
      cpuLimitCores: profile.cpu_cores,
      memoryBytes: memory,
      memoryLimitBytes: limit,
      networkRxBytes: c.rxBytes,
      networkTxBytes: c.txBytes,
      diskBytes: disk,
      diskQuotaBytes: quota,
      restarts: w.restarts,
      startedAtMs: w.startedAtMs,
    };
  }
}

/** A fixed number in [0, 1) per instance. */
function shareOf(key: string): number {
  return createHash("sha256").update(key).digest().readUInt32BE(0) / 2 ** 32;
}
