import { Counter, Gauge, type Registry } from "prom-client";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { ProviderConfig } from "../config/index.ts";
import { type SnapshotSet, type SnapshotSources, takeSnapshot } from "./snapshot.ts";

/**
 * providerd's online snapshots (`placement_snapshot_dir`): one complete set every
 * `placement_snapshot_interval`, `placement_snapshot_retain` sets kept. The timer is
 * chained (the next run is armed only when this one ended), so runs never overlap; a
 * failed run is logged and counted, and the next one comes at the usual interval.
 */
export interface SnapshotScheduleOptions {
  dir: string;
  intervalMs: number;
  retain: number;
  sources: SnapshotSources;
  clock: Clock;
  logger: Logger;
  registry?: Registry;
}

export class SnapshotSchedule {
  readonly #o: SnapshotScheduleOptions;
  readonly #lastSuccess: Gauge;
  readonly #failures: Counter;
  #cancel: (() => void) | undefined;
  #running: Promise<unknown> = Promise.resolve();
  #stopped = false;

  constructor(o: SnapshotScheduleOptions) {
    this.#o = o;
    const registers = o.registry === undefined ? [] : [o.registry];
    this.#lastSuccess = new Gauge({
      name: "fred_placement_snapshot_last_success_timestamp_seconds",
      help: "When the latest complete placement/payload snapshot set was written (0: none yet)",
      registers,
    });
    this.#failures = new Counter({
      name: "fred_placement_snapshot_failures_total",
      help: "Snapshot runs that failed (the previous sets are kept)",
      registers,
    });
  }

  start(): void {
    this.#arm();
  }

  /** One set now (serialized after a run in progress). */
  snapshotNow(): Promise<SnapshotSet> {
    const run = this.#running.then(async () => {
      const { dir, sources, clock, retain } = this.#o;
      const set = await takeSnapshot(dir, sources, clock.now(), retain);
      this.#lastSuccess.set(set.at / 1000);
      return set;
    });
    this.#running = run.catch(() => {});
    return run;
  }

  /** Cancels the timer and waits for a run in progress (the stores close after this). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancel?.();
    await this.#running;
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#cancel = this.#o.clock.setTimer(this.#o.intervalMs, () => {
      this.snapshotNow().then(
        (set) => this.#o.logger.info({ snapshot: set.dir, pruned: set.pruned.length }, "snapshot written"),
        (err: unknown) => {
          this.#failures.inc();
          this.#o.logger.error({ err }, "snapshot failed");
        },
      );
      void this.#running.then(() => this.#arm());
    });
  }
}

/**
 * The schedule placement_snapshot_dir asks for, started; undefined when the key is empty
 * (no snapshots). The caller stops it.
 */
export function scheduleSnapshots(
  config: Pick<
    ProviderConfig,
    "placementSnapshotDir" | "placementSnapshotIntervalMs" | "placementSnapshotRetain"
  >,
  sources: SnapshotSources,
  clock: Clock,
  o: { logger: Logger; registry?: Registry },
): SnapshotSchedule | undefined {
  if (config.placementSnapshotDir === "") return undefined;
  const schedule = new SnapshotSchedule({
    dir: config.placementSnapshotDir,
    intervalMs: config.placementSnapshotIntervalMs,
    retain: config.placementSnapshotRetain,
    sources,
    clock,
    ...o,
  });
  schedule.start();
  return schedule;
}
