import type { Registry } from "prom-client";
import { PeriodicPass, withStallDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError, isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { BackendClient } from "../backend-client/index.ts";
import type { BackendConfig } from "../config/index.ts";
import { DEFAULT_MAX_USAGE_SERIES, LeaseUsageSeries } from "./series.ts";

/**
 * `lease_usage_metrics: true`: one PeriodicPass per unfenced backend walks its `GET /usage`
 * (one request per 1,000 leases) and hands the reading to the series. A pass runs at the
 * backend's own sampling interval (what its last answer said), kept between 5 s and 60 s;
 * 15 s until a backend has answered. Each page must arrive within 10 s of the previous one
 * (and within the backend's own `timeout`). A failed pass keeps the backend's previous
 * series for one more pass; a backend that cannot sample (501 unsupported) has no series,
 * logged once. Nothing of this exists while the key is off.
 */
export const USAGE_POLL_MIN_MS = 5_000;
export const USAGE_POLL_MAX_MS = 60_000;
export const USAGE_POLL_FIRST_MS = 15_000;
export const USAGE_PAGE_DEADLINE_MS = 10_000;

export interface UsageMetricsOptions {
  backends: readonly BackendConfig[];
  clients: ReadonlyMap<string, BackendClient>;
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /** The series cap (tests lower it; operators cannot). */
  maxSeries?: number;
}

export class UsageMetricsPoll {
  readonly series: LeaseUsageSeries;
  readonly #passes: PeriodicPass[] = [];

  constructor(o: UsageMetricsOptions) {
    this.series = new LeaseUsageSeries(o.registry, o.maxSeries ?? DEFAULT_MAX_USAGE_SERIES);
    for (const backend of o.backends) {
      const client = o.clients.get(backend.name);
      if (backend.fenced || client === undefined) continue;
      this.#passes.push(this.#passFor(backend.name, client, o));
    }
  }

  #passFor(name: string, client: BackendClient, o: UsageMetricsOptions): PeriodicPass {
    const log = o.logger.child({ backend: name });
    let intervalMs = USAGE_POLL_FIRST_MS;
    let unsupportedLogged = false;
    const timedOut = () =>
      new FredError(
        "ERR_BACKEND_TIMEOUT",
        `backend ${name}: no usage page within ${USAGE_PAGE_DEADLINE_MS} ms`,
        {
          retryable: true,
        },
      );
    return new PeriodicPass({
      clock: o.clock,
      intervalMs: () => intervalMs,
      run: async (signal) => {
        try {
          const reading = await withStallDeadline(
            o.clock,
            USAGE_PAGE_DEADLINE_MS,
            signal,
            timedOut,
            (s, progressed) => client.currentUsage(s, progressed),
          );
          const ms = reading.sampleIntervalSeconds * 1000;
          intervalMs = Math.min(USAGE_POLL_MAX_MS, Math.max(USAGE_POLL_MIN_MS, ms));
          this.series.replace(name, reading.leases);
          unsupportedLogged = false;
        } catch (err) {
          if (signal.aborted) return;
          if (isFredError(err) && err.code === "ERR_BACKEND_UNSUPPORTED") {
            this.series.drop(name);
            intervalMs = USAGE_POLL_MAX_MS;
            if (!unsupportedLogged) log.info("backend cannot sample usage: no lease usage series from it");
            unsupportedLogged = true;
            return;
          }
          this.series.failed(name);
          throw err;
        }
      },
      onError: (err) =>
        log.warn({ err }, "lease usage read failed; its series stay for one more pass at most"),
    });
  }

  start(): void {
    for (const p of this.#passes) p.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#passes.map((p) => p.stop()));
  }
}
