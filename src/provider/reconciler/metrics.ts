import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** The reconciler's metrics, as the README seed names them. */
export interface ReconcilerMetrics {
  runs: Counter<"outcome">;
  duration: Histogram;
  lastSuccess: Gauge;
  actions: Counter<"action">;
  sweepComplete: Gauge;
  skips: Counter<"pass" | "reason">;
  conflicts: Counter;
}

export function createReconcilerMetrics(registry: Registry | undefined): ReconcilerMetrics {
  const registers = registry === undefined ? [] : [registry];
  return {
    runs: new Counter({
      name: "fred_reconciler_runs_total",
      help: "Reconciler sweeps by outcome (complete, degraded, failed)",
      labelNames: ["outcome"],
      registers,
    }),
    duration: new Histogram({
      name: "fred_reconciler_duration_seconds",
      help: "Wall time of one reconciler sweep",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    lastSuccess: new Gauge({
      name: "fred_reconciler_last_success_timestamp_seconds",
      help: "When the latest complete sweep ended (a degraded sweep does not advance it)",
      registers,
    }),
    actions: new Counter({
      name: "fred_reconciler_actions_total",
      help: "Actions the reconciler executed, by kind",
      labelNames: ["action"],
      registers,
    }),
    sweepComplete: new Gauge({
      name: "fred_reconciler_sweep_complete",
      help: "1 when every configured backend answered the latest sweep, else 0",
      registers,
    }),
    skips: new Counter({
      name: "fred_reconciler_cleanup_skips_total",
      help: "Destructive-pass candidates left alone, by pass and reason",
      labelNames: ["pass", "reason"],
      registers,
    }),
    conflicts: new Counter({
      name: "fred_reconciler_conflicts_total",
      help: "Leases the reconciler quarantined (conflict or untrusted positive membership)",
      registers,
    }),
  };
}
