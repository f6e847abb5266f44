import { Counter, Gauge, type Registry } from "prom-client";
import type { InstanceUsageBody, LeaseUsageRow } from "../../core/backend-contract/index.ts";

/**
 * The per-lease usage series providerd exports when `lease_usage_metrics` is on. Each
 * backend's last reading is kept here (one row per lease instance) and the metrics are
 * filled from it at scrape time, so a lease no longer reported has no series at the next
 * scrape. Labels are `lease_uuid`, `service`, `instance` only.
 *
 * Bounded: at most `maxSeries` lease instances are exported across all backends (10,000 by
 * default). Past it, instances already exported keep their series and new ones are left
 * out; `fred_lease_usage_series_left_out` says how many were. A backend whose read failed
 * keeps its previous reading for one more failed pass, then its series go (a stale figure
 * is worse than none); a backend that cannot sample has none.
 */
export const DEFAULT_MAX_USAGE_SERIES = 10_000;

const LABELS = ["lease_uuid", "service", "instance"] as const;
type Labels = Record<(typeof LABELS)[number], string>;

interface Row {
  key: string;
  labels: Labels;
  usage: InstanceUsageBody;
}

interface BackendReading {
  rows: Row[];
  leftOut: number;
  /** A failed pass was already forgiven: the next failure drops the reading. */
  failedOnce: boolean;
}

/** The exported metrics: name, type, help and the instance's figure (null: no series). */
const METRICS: {
  name: string;
  type: "gauge" | "counter";
  help: string;
  value: (u: InstanceUsageBody) => number | null;
}[] = [
  {
    name: "fred_lease_cpu_cores",
    type: "gauge",
    help: "Cores the lease instance used on average over the backend's last sampling interval",
    value: (u) => u.cpu_cores,
  },
  {
    name: "fred_lease_cpu_throttled_seconds_total",
    type: "counter",
    help: "Seconds the lease instance was throttled at its CPU limit since it started (resets on restart)",
    value: (u) => u.cpu_throttled_seconds,
  },
  {
    name: "fred_lease_memory_bytes",
    type: "gauge",
    help: "Memory the lease instance uses",
    value: (u) => u.memory_bytes,
  },
  {
    name: "fred_lease_memory_limit_bytes",
    type: "gauge",
    help: "The lease instance's memory limit",
    value: (u) => u.memory_limit_bytes,
  },
  {
    name: "fred_lease_network_receive_bytes_total",
    type: "counter",
    help: "Bytes the lease instance received since it started (resets on restart)",
    value: (u) => u.network_rx_bytes,
  },
  {
    name: "fred_lease_network_transmit_bytes_total",
    type: "counter",
    help: "Bytes the lease instance sent since it started (resets on restart)",
    value: (u) => u.network_tx_bytes,
  },
  {
    name: "fred_lease_disk_bytes",
    type: "gauge",
    help: "Bytes the lease instance's volumes hold, by the volume file system's own accounting",
    value: (u) => u.disk_bytes,
  },
  {
    name: "fred_lease_disk_quota_bytes",
    type: "gauge",
    help: "The lease instance's volume quota",
    value: (u) => u.disk_quota_bytes,
  },
];

export class LeaseUsageSeries {
  readonly #maxSeries: number;
  readonly #backends = new Map<string, BackendReading>();

  constructor(registry: Registry, maxSeries = DEFAULT_MAX_USAGE_SERIES) {
    this.#maxSeries = maxSeries;
    const registers = [registry];
    const rows = () => [...this.#backends.values()].flatMap((b) => b.rows);
    for (const m of METRICS) {
      // Filled from the readings at scrape time: reset first so gone leases lose their series.
      // A counter is set to the backend's cumulative figure (reset, then increased by it).
      const collect = function (this: Gauge | Counter) {
        this.reset();
        for (const r of rows()) {
          const v = m.value(r.usage);
          if (v === null) continue;
          if (this instanceof Gauge) this.set(r.labels, v);
          else this.inc(r.labels, v);
        }
      };
      const config = { name: m.name, help: m.help, labelNames: LABELS, registers, collect };
      if (m.type === "gauge") new Gauge(config);
      else new Counter(config);
    }
    const leftOut = () => this.leftOut;
    new Gauge({
      name: "fred_lease_usage_series_left_out",
      help: `Lease instances with no usage series because the cap of ${maxSeries} was reached`,
      registers,
      collect(this: Gauge) {
        this.set(leftOut());
      },
    });
  }

  /** Lease instances exported now (what the cap counts). */
  get size(): number {
    let n = 0;
    for (const b of this.#backends.values()) n += b.rows.length;
    return n;
  }

  /** Lease instances left out by the cap at the latest readings. */
  get leftOut(): number {
    let n = 0;
    for (const b of this.#backends.values()) n += b.leftOut;
    return n;
  }

  /** A backend's fresh reading replaces its previous one. */
  replace(backend: string, leases: readonly LeaseUsageRow[]): void {
    const previous = new Set(this.#backends.get(backend)?.rows.map((r) => r.key));
    let room = this.#maxSeries - (this.size - previous.size);
    const fresh: Row[] = [];
    for (const lease of leases)
      for (const usage of lease.instances) {
        const key = `${lease.lease_uuid}/${usage.service}/${usage.instance}`;
        fresh.push({
          key,
          labels: { lease_uuid: lease.lease_uuid, service: usage.service, instance: String(usage.instance) },
          usage,
        });
      }
    // Instances already exported first, so a crowd of new leases never takes their series.
    const kept: Row[] = [];
    for (const row of fresh)
      if (previous.has(row.key) && room > 0) {
        kept.push(row);
        room--;
      }
    for (const row of fresh)
      if (!previous.has(row.key) && room > 0) {
        kept.push(row);
        room--;
      }
    this.#backends.set(backend, { rows: kept, leftOut: fresh.length - kept.length, failedOnce: false });
  }

  /** A failed read: the previous reading stays for this pass only. */
  failed(backend: string): void {
    const reading = this.#backends.get(backend);
    if (reading === undefined) return;
    if (reading.failedOnce) this.#backends.delete(backend);
    else reading.failedOnce = true;
  }

  /** The backend has no series (it cannot sample, or it is no longer polled). */
  drop(backend: string): void {
    this.#backends.delete(backend);
  }
}
