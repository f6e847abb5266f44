import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { type RequestKind, requestSource, type Scenario, type ScenarioInput } from "./loadtest-scenarios.ts";

/**
 * The load generator behind `fred loadtest`: `concurrency` workers send one scenario's
 * requests through one keep-alive pool until `count` requests were sent or `durationMs`
 * passed, whichever comes first, and the result is throughput, status counts and latency
 * percentiles (per request kind as well for `mixed`). 2xx answers are the successes;
 * every other status is counted by its code. Redirects are not followed (undici's pool
 * never does), so credentials and recorded callbacks stay at the chosen origin.
 */
export type { Scenario } from "./loadtest-scenarios.ts";

export interface LoadPlan extends ScenarioInput {
  target: URL;
  count: number;
  durationMs: number;
  concurrency: number;
}

export interface Tally {
  requests: number;
  successes: number;
  statuses: Record<string, number>;
  errors: number;
  p50_ms: number;
  p99_ms: number;
}

export interface LoadResult {
  scenario: Scenario;
  requests: number;
  successes: number;
  statuses: Record<string, number>;
  errors: number;
  duration_s: number;
  throughput_rps: number;
  p50_ms: number;
  p99_ms: number;
  /** mixed only: the same counts for each kind of request it sent. */
  parts?: Partial<Record<RequestKind, Tally>>;
}

const REQUEST_TIMEOUT_MS = 10_000;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round(sorted[Math.max(0, i)]! * 1000) / 1000;
}

class Counts {
  requests = 0;
  errors = 0;
  readonly latencies: number[] = [];
  readonly statuses: Record<string, number> = {};

  answered(status: number, ms: number): void {
    this.latencies.push(ms);
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }

  tally(): Tally {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const successes = Object.entries(this.statuses)
      .filter(([code]) => code.startsWith("2"))
      .reduce((sum, [, n]) => sum + n, 0);
    return {
      requests: this.requests,
      successes,
      statuses: this.statuses,
      errors: this.errors,
      p50_ms: percentile(sorted, 50),
      p99_ms: percentile(sorted, 99),
    };
  }
}

export async function runLoad(plan: LoadPlan): Promise<LoadResult> {
  const next = requestSource(plan);
  const pool = new Pool(plan.target.origin, { connections: plan.concurrency });
  const all = new Counts();
  const parts = new Map<RequestKind, Counts>();
  const stop = new AbortController();
  const cancelTimer = plan.clock.setTimer(plan.durationMs, () => stop.abort());
  let reserved = 0;
  const started = performance.now();
  const worker = async () => {
    while (reserved < plan.count && !stop.signal.aborted) {
      reserved++;
      const req = await next(stop.signal);
      if (req === undefined) return;
      const part = parts.get(req.kind) ?? new Counts();
      parts.set(req.kind, part);
      all.requests++;
      part.requests++;
      const t0 = performance.now();
      try {
        const res = await pool.request({
          method: req.method,
          path: req.path,
          headers: req.headers,
          ...(req.body === undefined ? {} : { body: req.body }),
          headersTimeout: REQUEST_TIMEOUT_MS,
          bodyTimeout: REQUEST_TIMEOUT_MS,
        });
        await res.body.dump();
        const ms = performance.now() - t0;
        all.answered(res.statusCode, ms);
        part.answered(res.statusCode, ms);
      } catch {
        all.errors++;
        part.errors++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: plan.concurrency }, worker));
  } finally {
    cancelTimer();
    await pool.close();
  }
  const elapsed = (performance.now() - started) / 1000;
  const { requests, successes, statuses, errors, p50_ms, p99_ms } = all.tally();
  const result: LoadResult = {
    scenario: plan.scenario,
    requests,
    successes,
    statuses,
    errors,
    duration_s: Math.round(elapsed * 1000) / 1000,
    throughput_rps: elapsed > 0 ? Math.round((all.latencies.length / elapsed) * 10) / 10 : 0,
    p50_ms,
    p99_ms,
  };
  if (plan.scenario === "mixed")
    result.parts = Object.fromEntries([...parts].map(([kind, c]) => [kind, c.tally()]));
  return result;
}
