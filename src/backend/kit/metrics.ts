import { Counter, Gauge, Registry } from "prom-client";
import type { Journal } from "./journal/journal.ts";
import type { ResourcePool } from "./resources.ts";

/** Prometheus metrics of one backend process, on its own registry (no global state). */
export interface KitMetrics {
  registry: Registry;
  provisionsAdmitted: Counter;
  provisionsRefused: Counter<"status">;
  callbacksDelivered: Counter<"kind">;
  callbackAttemptsFailed: Counter<"kind">;
}

/** `registry`: the backend kind's own registry when it has metrics too (one /metrics for all). */
export function createKitMetrics(
  journal: Journal,
  pool: ResourcePool,
  registry = new Registry(),
): KitMetrics {
  const provisionsAdmitted = new Counter({
    name: "fred_backend_provisions_admitted_total",
    help: "Provisions accepted with a durable intent",
    registers: [registry],
  });
  const provisionsRefused = new Counter({
    name: "fred_backend_provisions_refused_total",
    help: "Provisions refused before any side effect, by HTTP status",
    labelNames: ["status"] as const,
    registers: [registry],
  });
  const callbacksDelivered = new Counter({
    name: "fred_backend_callbacks_delivered_total",
    help: "Callbacks acknowledged with a 2xx",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  const callbackAttemptsFailed = new Counter({
    name: "fred_backend_callback_attempts_failed_total",
    help: "Callback POST attempts that did not get a 2xx",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "fred_backend_outbox_pending",
    help: "Callbacks committed and not yet delivered",
    registers: [registry],
    collect() {
      this.set(journal.db.open ? journal.outboxSize() : 0);
    },
  });
  new Gauge({
    name: "fred_backend_allocated_cpu_cores",
    help: "CPU cores allocated or reserved",
    registers: [registry],
    collect() {
      this.set(pool.stats().allocated_cpu_cores);
    },
  });
  new Gauge({
    name: "fred_backend_reserved_leases",
    help: "Leases holding a reservation that is not running yet",
    registers: [registry],
    collect() {
      this.set(pool.stats().reserved_leases);
    },
  });
  let byStatus: { all(): unknown[] } | undefined;
  new Gauge({
    name: "fred_backend_retained_leases",
    help: "Retention rows by status (closing, active, restoring, reaping)",
    labelNames: ["status"] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!journal.db.open) return;
      byStatus ??= journal.db.prepare("SELECT status, count(*) AS n FROM retentions GROUP BY status");
      for (const r of byStatus.all() as { status: string; n: number }[]) this.set({ status: r.status }, r.n);
    },
  });
  return { registry, provisionsAdmitted, provisionsRefused, callbacksDelivered, callbackAttemptsFailed };
}
