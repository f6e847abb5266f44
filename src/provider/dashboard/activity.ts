import type { Clock } from "../../core/clock.ts";
import type { LifecycleObserver } from "../lifecycle/index.ts";

/**
 * What happened in this process that the dashboard counts: settled provisions (by hour
 * for the last 24 h, and each one's latency within the current sample step) and tenant
 * API answers. Fed by a tap on the lifecycle observer and an onResponse hook on the
 * tenant listener; lost at restart like every in-process figure of the dashboard.
 */
const HOUR_MS = 3_600_000;
const HOURS = 24;
/** Latencies kept per step for its quantiles; past this, later ones replace random ones. */
const MAX_STEP_LATENCIES = 4_096;

export interface HourTally {
  /** The hour's start (ms since the epoch). */
  hourMs: number;
  succeeded: number;
  failed: number;
}

export interface StepActivity {
  provisions: number;
  /** Seconds, unsorted. */
  latencies: number[];
  apiRequests: number;
  apiErrors: number;
}

export class DashboardActivity {
  readonly #clock: Clock;
  readonly #random: () => number;
  /** Newest last; only hours that saw a provision. */
  readonly #hours: HourTally[] = [];
  #step: StepActivity = emptyStep();
  #latenciesSeen = 0;

  constructor(clock: Clock, random: () => number = Math.random) {
    this.#clock = clock;
    this.#random = random;
  }

  provisionSettled(outcome: "success" | "failed", latencyMs: number): void {
    const hourMs = Math.floor(this.#clock.now() / HOUR_MS) * HOUR_MS;
    let last = this.#hours.at(-1);
    if (last?.hourMs !== hourMs) {
      last = { hourMs, succeeded: 0, failed: 0 };
      this.#hours.push(last);
      while (this.#hours.length > HOURS) this.#hours.shift();
    }
    if (outcome === "success") last.succeeded++;
    else last.failed++;
    this.#step.provisions++;
    // Reservoir sampling: a bounded, uniform sample of the step's latencies.
    this.#latenciesSeen++;
    const seconds = latencyMs / 1000;
    if (this.#step.latencies.length < MAX_STEP_LATENCIES) this.#step.latencies.push(seconds);
    else {
      const at = Math.floor(this.#random() * this.#latenciesSeen);
      if (at < MAX_STEP_LATENCIES) this.#step.latencies[at] = seconds;
    }
  }

  /** A tenant API answer (`/v1/…`); 5xx count as errors. */
  tenantAnswered(status: number): void {
    this.#step.apiRequests++;
    if (status >= 500) this.#step.apiErrors++;
  }

  /** The last 24 hours, oldest first, every hour present (zeros where none settled). */
  provisionsPerHour(): HourTally[] {
    const current = Math.floor(this.#clock.now() / HOUR_MS) * HOUR_MS;
    const byHour = new Map(this.#hours.map((h) => [h.hourMs, h]));
    const out: HourTally[] = [];
    for (let i = HOURS - 1; i >= 0; i--) {
      const hourMs = current - i * HOUR_MS;
      const h = byHour.get(hourMs);
      out.push({ hourMs, succeeded: h?.succeeded ?? 0, failed: h?.failed ?? 0 });
    }
    return out;
  }

  /** Hands over the current step's figures and starts the next (the sample ring's tick). */
  takeStep(): StepActivity {
    const step = this.#step;
    this.#step = emptyStep();
    this.#latenciesSeen = 0;
    return step;
  }

  /** The lifecycle observer with provision settlements also counted here. */
  tap(observer: LifecycleObserver): LifecycleObserver {
    return {
      ...observer,
      provisionSettled: (backend, outcome, ms) => {
        observer.provisionSettled(backend, outcome, ms);
        this.provisionSettled(outcome, ms);
      },
    };
  }
}

function emptyStep(): StepActivity {
  return { provisions: 0, latencies: [], apiRequests: 0, apiErrors: 0 };
}

/** The q-quantile (0..1) of `values` by nearest rank; null when there are none. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}
