import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { mintTenantToken } from "../auth/token.ts";

/**
 * The load generator behind `fred loadtest`: `concurrency` workers send one scenario's
 * requests through one keep-alive pool until `count` requests were sent or `durationMs`
 * passed, whichever comes first, and the result is throughput, status counts and latency
 * percentiles. Redirects are not followed (credentials stay at the chosen origin).
 */
export type Scenario = "rejection" | "status";

export interface LoadPlan {
  target: URL;
  scenario: Scenario;
  count: number;
  durationMs: number;
  concurrency: number;
  /** For authenticated scenarios: the tenant's leases and private key. */
  leases?: readonly string[];
  tenantKey?: Uint8Array;
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
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round(sorted[Math.max(0, i)]! * 1000) / 1000;
}

function requestFor(plan: LoadPlan, n: number): { path: string; headers: Record<string, string> } {
  if (plan.scenario === "rejection") {
    // Deliberately unauthenticated: what a flood of strangers costs the provider.
    return { path: `/v1/leases/${randomUUID()}/connection`, headers: {} };
  }
  const leases = plan.leases ?? [];
  const lease = leases[n % leases.length]!;
  const token = mintTenantToken({
    privateKey: plan.tenantKey!,
    leaseUuid: lease,
    timestamp: Math.floor(Date.now() / 1000),
  });
  return { path: `/v1/leases/${lease}/status`, headers: { authorization: `Bearer ${token}` } };
}

export async function runLoad(plan: LoadPlan): Promise<LoadResult> {
  const pool = new Pool(plan.target.origin, { connections: plan.concurrency });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let sent = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + plan.durationMs;
  const worker = async () => {
    while (sent < plan.count && performance.now() < deadline) {
      const n = sent++;
      const { path, headers } = requestFor(plan, n);
      const t0 = performance.now();
      try {
        const res = await pool.request({
          method: "GET",
          path,
          headers,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        await res.body.dump();
        latencies.push(performance.now() - t0);
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      } catch {
        errors++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: plan.concurrency }, worker));
  } finally {
    await pool.close();
  }
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const successes = Object.entries(statuses)
    .filter(([code]) => code.startsWith("2"))
    .reduce((sum, [, n]) => sum + n, 0);
  return {
    scenario: plan.scenario,
    requests: sent,
    successes,
    statuses,
    errors,
    duration_s: Math.round(elapsed * 1000) / 1000,
    throughput_rps: elapsed > 0 ? Math.round((latencies.length / elapsed) * 10) / 10 : 0,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
  };
}
