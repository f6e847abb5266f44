import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { LeaderState } from "../ha/leadership.ts";
import type { LifecycleObserver } from "../lifecycle/index.ts";

/**
 * providerd's own Prometheus metrics. Counters and the latency histogram are fed by the
 * lifecycle observer (`createProviderMetrics`, built before the lifecycle that feeds them);
 * gauges that mirror live state are read at scrape time through `collect`, so nothing on the
 * hot path touches them (`registerStateGauges`, once the components they read exist).
 */
export interface MetricSources {
  /** Durable lease records (the placement store's counts). */
  records: () => { placements: number; conflicts: number; attempts: number };
  /** Payloads the payload store holds (none without a store). */
  payloadsStored: () => Promise<number>;
  /** Leases waiting for their tenant's payload (in memory). */
  awaitingPayload: () => number;
  backendHealthy: () => Map<string, boolean>;
  queueDepths: () => Record<string, number>;
  feed: () => { lastBlockAtMs: number; lastHeight: number };
  now: () => number;
  /** This instance's role and fencing generation (fred_leader, fred_leader_generation). */
  leadership: () => LeaderState;
}

export interface ProviderMetrics {
  registry: Registry;
  observer: LifecycleObserver;
}

export function createProviderMetrics(): ProviderMetrics {
  const registry = new Registry();
  const registers = [registry];
  const latency = new Histogram({
    name: "fred_provision_latency_seconds",
    help: "From the committed attempt to the backend's callback",
    labelNames: ["backend", "outcome"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers,
  });
  const sent = new Counter({
    name: "fred_provision_requests_total",
    help: "Provision requests sent, by what the backend's answer proved",
    labelNames: ["backend", "outcome"],
    registers,
  });
  const callbacks = new Counter({
    name: "fred_callbacks_total",
    help: "Backend callbacks received, by outcome",
    labelNames: ["outcome"],
    registers,
  });
  const contradicted = new Counter({
    name: "fred_callbacks_contradicted_total",
    help: "Lifecycle callbacks the chain and the backend's own record contradicted (nothing changed)",
    labelNames: ["backend"],
    registers,
  });
  const closeRetryDropped = new Counter({
    name: "fred_close_retries_dropped_total",
    help: "Closes not queued for a retry because the retry queue held its 1,024 leases (the next sweep retries them)",
    registers,
  });
  const callbackTimeouts = new Counter({
    name: "fred_callback_timeouts_total",
    help: "Provision attempts that passed provision_callback_timeout without their callback",
    labelNames: ["backend"],
    registers,
  });
  return {
    registry,
    observer: {
      callbackTimeout: (backend) => callbackTimeouts.inc({ backend }),
      provisionSent: (backend, outcome) => sent.inc({ backend, outcome }),
      provisionSettled: (backend, outcome, ms) => latency.observe({ backend, outcome }, ms / 1000),
      callback: (outcome) => callbacks.inc({ outcome }),
      callbackContradicted: (backend) => contradicted.inc({ backend }),
      closeRetryDropped: () => closeRetryDropped.inc(),
    },
  };
}

export function registerStateGauges(registry: Registry, sources: MetricSources): void {
  const registers = [registry];
  new Gauge({
    name: "fred_leases",
    help: "Leases providerd holds records for, by record state",
    labelNames: ["state"],
    registers,
    collect() {
      const c = sources.records();
      this.set({ state: "confirmed" }, c.placements);
      this.set({ state: "conflict" }, c.conflicts);
      this.set({ state: "attempt" }, c.attempts);
      this.set({ state: "awaiting_payload" }, sources.awaitingPayload());
    },
  });
  new Gauge({
    name: "fred_provisions_in_flight",
    help: "Provision attempts recorded (sent or being sent) whose callback has not come yet",
    registers,
    collect() {
      this.set(sources.records().attempts);
    },
  });
  registerLeaderGauges(registry, sources.leadership);
  new Gauge({
    name: "fred_payloads_stored",
    help: "Tenant payloads the payload store holds for provisioning",
    registers,
    async collect() {
      this.set(await sources.payloadsStored());
    },
  });
  new Gauge({
    name: "fred_backend_healthy",
    help: "1 when the backend's last probe succeeded and it is not fenced",
    labelNames: ["backend"],
    registers,
    collect() {
      for (const [backend, ok] of sources.backendHealthy()) this.set({ backend }, ok ? 1 : 0);
    },
  });
  new Gauge({
    name: "fred_queue_depth",
    help: "Work waiting in providerd's internal queues",
    labelNames: ["queue"],
    registers,
    collect() {
      for (const [queue, n] of Object.entries(sources.queueDepths())) this.set({ queue }, n);
    },
  });
  new Gauge({
    name: "fred_chain_lag_seconds",
    help: "Seconds since the event feed last saw a new block",
    registers,
    collect() {
      const at = sources.feed().lastBlockAtMs;
      this.set(at === 0 ? 0 : Math.max(0, (sources.now() - at) / 1000));
    },
  });
}

/** fred_leader and fred_leader_generation: on a leader's full metrics and a standby's few. */
/** A standby's journaled requests by outcome (ha/inbox.ts), read from its running counts at each scrape. */
export function registerJournaledRequests(
  registry: Registry,
  outcomes: Readonly<Record<string, number>>,
): void {
  new Counter({
    name: "fred_standby_journaled_requests_total",
    help: "Requests this standby journaled in PostgreSQL for the leader because the leader's address refused them, by outcome (answered, withdrawn: no leader took it in time, unanswered, not_journaled: the database refused)",
    labelNames: ["outcome"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, n] of Object.entries(outcomes)) this.inc({ outcome }, n);
    },
  });
}

export function registerLeaderGauges(registry: Registry, leadership: () => LeaderState): void {
  const registers = [registry];
  new Gauge({
    name: "fred_leader",
    help: "1 while this instance leads the provider's instances (it alone acts on chain and backends), else 0",
    registers,
    collect() {
      this.set(leadership().role === "leader" ? 1 : 0);
    },
  });
  new Gauge({
    name: "fred_leader_generation",
    help: "The fencing generation this instance leads at; 0 while it does not lead",
    registers,
    collect() {
      this.set(leadership().generation ?? 0);
    },
  });
}
