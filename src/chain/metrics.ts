/**
 * Prometheus view of the chain client: the feed's liveness (last height, last event time,
 * reconnects, drops, malformed events) and the tx pipeline's outcomes, gas and fees, read at
 * scrape time from the live objects; and each ABCI query's duration, observed as it ends
 * (one histogram observation per query: the node round trip dwarfs it).
 */
import { Counter, Gauge, Histogram, type LabelValues, type Registry } from "prom-client";
import type { TxMetrics } from "./cosmos/tx-pipeline.ts";
import type { FeedMetrics } from "./events/feed.ts";

/** A gauge factory on `registry` whose values are read at scrape time by `collect`. */
export function scrapeGauge(registry: Registry) {
  return (name: string, help: string, labelNames: string[], collect: (g: Gauge) => void | Promise<void>) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        return collect(this);
      },
    });
}

/**
 * A counter on `registry` whose totals are read at scrape time from a monotonic source:
 * `collect` reports each label set's current total through `set`. Typed counter (not
 * gauge) so the `_total` names follow Prometheus' conventions and rate() applies.
 */
export function scrapeCounter(registry: Registry) {
  return (
    name: string,
    help: string,
    labelNames: string[],
    collect: (set: (value: number, labels?: LabelValues<string>) => void) => void,
  ) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        collect((value, labels) => this.inc(labels ?? {}, value));
      },
    });
}

export function registerChainMetrics(
  registry: Registry,
  sources: { feed?: () => FeedMetrics; tx?: TxMetrics },
): void {
  const gauge = scrapeGauge(registry);
  const counter = scrapeCounter(registry);
  const feed = sources.feed;
  if (feed !== undefined) {
    gauge("fred_chain_last_block_height", "Last block height the event feed saw", [], (g) =>
      g.set(feed().lastHeight),
    );
    gauge("fred_chain_last_block_time_seconds", "When the feed last saw a new block (Unix s)", [], (g) =>
      g.set(feed().lastBlockAtMs / 1000),
    );
    gauge(
      "fred_chain_last_event_time_seconds",
      "When the feed last delivered a lease event (Unix s)",
      [],
      (g) => g.set(feed().lastEventAtMs / 1000),
    );
    counter("fred_chain_feed_reconnects_total", "Event feed reconnects", [], (set) => set(feed().reconnects));
    counter("fred_chain_feed_heartbeat_timeouts_total", "Reconnects caused by no new block", [], (set) =>
      set(feed().heartbeatTimeouts),
    );
    counter("fred_chain_feed_dropped_events_total", "Events dropped for slow consumers", [], (set) =>
      set(feed().dropped),
    );
    counter("fred_chain_feed_malformed_total", "Malformed frames or event entries skipped", [], (set) =>
      set(feed().malformed),
    );
    gauge("fred_chain_feed_live", "1 while the event feed is connected", [], (g) =>
      g.set(feed().state === "live" ? 1 : 0),
    );
  }
  const tx = sources.tx;
  if (tx !== undefined) {
    counter("fred_chain_tx_outcomes_total", "Transactions by outcome", ["outcome"], (set) => {
      for (const [outcome, n] of tx.outcomes) set(n, { outcome });
    });
    counter(
      "fred_chain_transactions_total",
      "Transactions providerd sent, by what they do and whether they were included successfully",
      ["type", "outcome"],
      (set) => {
        for (const [key, n] of tx.transactions) {
          const [type, outcome] = key.split(" ");
          set(n, { type, outcome });
        }
      },
    );
    counter("fred_chain_gas_used_total", "Gas used by included transactions", [], (set) => set(tx.gasUsed));
    counter("fred_chain_fees_paid_total", "Fees paid, per denom", ["denom"], (set) => {
      for (const [denom, amount] of tx.feesPaid) set(Number(amount), { denom });
    });
    const queries = new Histogram({
      name: "fred_chain_query_duration_seconds",
      help: "ABCI queries to the chain node, by query path (answered, refused or timed out)",
      labelNames: ["query"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    tx.onQuery = (query, seconds) => queries.observe({ query }, seconds);
    counter(
      "fred_chain_simulation_failures_total",
      "Gas simulations that failed (fallback gas used)",
      [],
      (set) => set(tx.simulationFailures),
    );
  }
}
