import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/**
 * The Docker backend's own workload families: container starts by outcome, exits of a
 * workload's own accord by reason, and the time of each provision stage (image pull,
 * container create, container start, health/verification). Fed by the substrate on the
 * paths that do the work; with no registry they count into nothing.
 */
export type ProvisionStage = "pull" | "create" | "start" | "healthy";
export type ExitReason = "oom" | "error" | "completed" | "killed";

export class DockerMetrics {
  readonly #starts: Counter<"outcome">;
  readonly #exits: Counter<"reason">;
  readonly #stages: Histogram<"stage">;

  constructor(registry: Registry | undefined) {
    const registers = registry ? [registry] : [];
    this.#starts = new Counter({
      name: "fred_docker_container_starts_total",
      help: "Container start calls, by outcome (success or failed)",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.#exits = new Counter({
      name: "fred_docker_container_exits_total",
      help: "Workload containers that exited on their own, by reason (oom, error, completed, killed)",
      labelNames: ["reason"] as const,
      registers,
    });
    this.#stages = new Histogram({
      name: "fred_docker_provision_stage_seconds",
      help: "Time of each provision stage (pull, create, start, healthy)",
      labelNames: ["stage"] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
  }

  containerStart(outcome: "success" | "failed"): void {
    this.#starts.inc({ outcome });
  }

  containerExit(reason: ExitReason): void {
    this.#exits.inc({ reason });
  }

  stage(stage: ProvisionStage, seconds: number): void {
    this.#stages.observe({ stage }, seconds);
  }

  /** Runs `work` and records its time as `stage` (also when it fails: the time was spent). */
  async timed<T>(stage: ProvisionStage, now: () => number, work: () => Promise<T>): Promise<T> {
    const started = now();
    try {
      return await work();
    } finally {
      this.stage(stage, (now() - started) / 1000);
    }
  }
}

/** Why a container ended: the engine's OOM flag first, then its exit code (128+n: killed by signal n). */
export function exitReason(oomKilled: boolean, exitCode: number | undefined): ExitReason {
  if (oomKilled) return "oom";
  if (exitCode === 0) return "completed";
  if (exitCode !== undefined && exitCode > 128) return "killed";
  return "error";
}

/**
 * Tenant volumes' quota usage, summed over every lease the usage sampler saw on its last
 * pass (btrfs qgroups; both 0 without durable volumes). Read at scrape time.
 */
export function registerVolumeGauges(
  registry: Registry,
  totals: () => { usedBytes: number; quotaBytes: number } | undefined,
): void {
  new Gauge({
    name: "fred_docker_volume_used_bytes",
    help: "Bytes used by tenant volumes, summed over leases (last usage pass)",
    registers: [registry],
    collect() {
      this.set(totals()?.usedBytes ?? 0);
    },
  });
  new Gauge({
    name: "fred_docker_volume_quota_bytes",
    help: "Quotas set on tenant volumes, summed over leases (last usage pass)",
    registers: [registry],
    collect() {
      this.set(totals()?.quotaBytes ?? 0);
    },
  });
}
