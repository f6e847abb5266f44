import { Counter, Histogram, type Registry } from "prom-client";
import { scrapeCounter, scrapeGauge } from "../../chain/metrics.ts";
import type { BackendConfig } from "../config/index.ts";

/**
 * `fred_backend_*` as providerd sees its backends. What happens per call (requests,
 * latency, undecodable answers, capacity refusals) is reported by the clients through
 * `BackendCallObserver`; what is state (breaker, fenced, draining, routing fallbacks) is
 * read at scrape time.
 */
export interface BackendCallObserver {
  /** One request answered with `status`, or "error" when no answer came (timeout, transport, open circuit). */
  call(backend: string, operation: string, status: number | "error", seconds: number): void;
  /** An answer whose body did not decode as the contract says. */
  malformed(backend: string): void;
  /** A provision (or restore) the backend refused for lack of capacity. */
  insufficientResources(backend: string): void;
}

export const silentCalls: BackendCallObserver = {
  call: () => {},
  malformed: () => {},
  insufficientResources: () => {},
};

export function createBackendCallMetrics(registry: Registry): BackendCallObserver {
  const registers = [registry];
  const requests = new Counter({
    name: "fred_backend_requests_total",
    help: "Requests providerd sent to its backends, by operation and status (error: no answer)",
    labelNames: ["backend", "operation", "status"],
    registers,
  });
  const duration = new Histogram({
    name: "fred_backend_request_duration_seconds",
    help: "Time to a backend's answer, by operation",
    labelNames: ["backend", "operation"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const malformed = new Counter({
    name: "fred_backend_malformed_responses_total",
    help: "Backend answers whose body did not decode as the backend contract says",
    labelNames: ["backend"],
    registers,
  });
  const capacity = new Counter({
    name: "fred_backend_insufficient_resources_total",
    help: "Provisions a backend refused for lack of capacity (503 insufficient_resources)",
    labelNames: ["backend"],
    registers,
  });
  // Label-bound children kept per (backend, operation, status), as the API metrics do: the
  // set is bounded by the configuration, and a bound child skips prom-client's label hashing
  // on each of the two calls every request makes.
  const series = new Map<string, { count: () => void; time: (seconds: number) => void }>();
  return {
    call(backend, operation, status, seconds) {
      const key = `${backend}\u0000${operation}\u0000${status}`;
      let s = series.get(key);
      if (s === undefined) {
        const counter = requests.labels({ backend, operation, status: String(status) });
        const histogram = duration.labels({ backend, operation });
        s = { count: () => counter.inc(), time: (v) => histogram.observe(v) };
        series.set(key, s);
      }
      s.count();
      s.time(seconds);
    },
    malformed: (backend) => malformed.inc({ backend }),
    insufficientResources: (backend) => capacity.inc({ backend }),
  };
}

const BREAKER_VALUE = { closed: 0, "half-open": 1, open: 2, isolated: 2 } as const;

/** Breaker state, operator flags and routing fallbacks, read at scrape time. */
export function registerFleetGauges(
  registry: Registry,
  sources: {
    backends: readonly BackendConfig[];
    clients: ReadonlyMap<string, { circuitState: keyof typeof BREAKER_VALUE }>;
    routingFallbacks: () => number;
  },
): void {
  const gauge = scrapeGauge(registry);
  gauge(
    "fred_backend_circuit_breaker_state",
    "Each backend's circuit breaker: 0 closed, 1 half-open, 2 open",
    ["backend"],
    (g) => {
      for (const [backend, client] of sources.clients) g.set({ backend }, BREAKER_VALUE[client.circuitState]);
    },
  );
  gauge("fred_backend_fenced", "1 while the backend is fenced (nothing is sent to it)", ["backend"], (g) => {
    for (const b of sources.backends) g.set({ backend: b.name }, b.fenced ? 1 : 0);
  });
  gauge("fred_backend_draining", "1 while the backend is draining (no new leases)", ["backend"], (g) => {
    for (const b of sources.backends) g.set({ backend: b.name }, b.draining ? 1 : 0);
  });
  scrapeCounter(registry)(
    "fred_routing_fallbacks_total",
    "New leases routed round-robin because no matching backend had usable load figures",
    [],
    (set) => set(sources.routingFallbacks()),
  );
}
