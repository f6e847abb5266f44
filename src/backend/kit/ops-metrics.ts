import { statfs } from "node:fs/promises";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * A backend's housekeeping families, on the backend's one registry: the data file
 * system's fill (statfs at scrape time), retention sweeps and the bytes expired retained
 * data freed, and destroys the backend refused for lack of proof that the data may go.
 */
export type DestroyRefusal = "no_tombstone" | "foreign_owner";

const DESTROYS_REFUSED = "fred_backend_destroys_refused_total";

/**
 * The destroys-refused counter of `registry`, made on first use: the kit (orphans without
 * a close) and a substrate (volumes another owner holds) both count into it.
 */
export function destroysRefused(registry: Registry | undefined): (reason: DestroyRefusal) => void {
  if (registry === undefined) return () => {};
  const counter =
    (registry.getSingleMetric(DESTROYS_REFUSED) as Counter<"reason"> | undefined) ??
    new Counter({
      name: DESTROYS_REFUSED,
      help: "Data the backend refused to destroy for lack of proof (no close recorded, another owner)",
      labelNames: ["reason"] as const,
      registers: [registry],
    });
  return (reason) => counter.inc({ reason });
}

/** Used and total bytes of the file system holding `path`, read when scraped. */
export function registerDiskGauges(registry: Registry, path: string): void {
  const read = () => statfs(path).catch(() => undefined);
  new Gauge({
    name: "fred_backend_disk_used_bytes",
    help: "Bytes used on the file system holding the backend's data",
    registers: [registry],
    async collect() {
      const s = await read();
      if (s !== undefined) this.set((s.blocks - s.bfree) * s.bsize);
    },
  });
  new Gauge({
    name: "fred_backend_disk_capacity_bytes",
    help: "Size of the file system holding the backend's data",
    registers: [registry],
    async collect() {
      const s = await read();
      if (s !== undefined) this.set(s.blocks * s.bsize);
    },
  });
}

export interface RetentionObserver {
  sweep(outcome: "success" | "failed"): void;
  freed(bytes: number): void;
}

export function retentionMetrics(registry: Registry): RetentionObserver {
  const sweeps = new Counter({
    name: "fred_backend_retention_sweeps_total",
    help: "Retention sweeps (expiry, destruction of reaped data, orphan pruning), by outcome",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const freed = new Counter({
    name: "fred_backend_retention_freed_bytes_total",
    help: "Bytes of retained data destroyed because it expired or was evicted",
    registers: [registry],
  });
  return { sweep: (outcome) => sweeps.inc({ outcome }), freed: (bytes) => freed.inc(bytes) };
}
