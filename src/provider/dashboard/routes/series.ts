import { ApiError } from "../../api/errors.ts";
import type { DashboardContext } from "../context.ts";

/**
 * `GET /api/series?window=1h|6h|24h` (24h by default): the charts' points from the
 * in-process sample ring, `[unix seconds, value]` pairs oldest first; a null value is a
 * step without the figure (no provision settled: no latency). Lost at restart.
 */
const WINDOWS: Readonly<Record<string, number>> = { "1h": 3_600, "6h": 21_600, "24h": 86_400 };

export function parseWindow(raw: unknown): number {
  const query = (raw ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(query))
    if (key !== "window")
      throw new ApiError(
        "ERR_API_BAD_QUERY",
        400,
        `unknown query parameter ${JSON.stringify(key.slice(0, 64))}`,
      );
  const w = query.window;
  if (w === undefined) return WINDOWS["24h"] as number;
  if (typeof w !== "string" || WINDOWS[w] === undefined)
    throw new ApiError("ERR_API_BAD_QUERY", 400, "window must be one of 1h, 6h, 24h");
  return WINDOWS[w];
}

export function series(ctx: DashboardContext, windowSeconds: number) {
  const samples = ctx.ring.within(windowSeconds);
  const points = (pick: (s: (typeof samples)[number]) => number | null) =>
    samples.map((s) => [s.t, pick(s)] as [number, number | null]);
  const denoms = [...new Set(samples.flatMap((s) => Object.keys(s.earnings)))].sort();
  return {
    step_seconds: ctx.ring.stepMs / 1000,
    window_seconds: windowSeconds,
    series: {
      leases_active: points((s) => s.leasesActive),
      provisions_per_minute: points((s) => s.provisionsPerMinute),
      provision_latency_p50_seconds: points((s) => s.latencyP50),
      provision_latency_p99_seconds: points((s) => s.latencyP99),
      api_requests_per_second: points((s) => s.apiRequestsPerSecond),
      api_errors_per_second: points((s) => s.apiErrorsPerSecond),
      earnings: Object.fromEntries(denoms.map((d) => [d, points((s) => s.earnings[d] ?? 0)])),
    },
    sources: {
      leases_active: "placement store (confirmed records)",
      api_requests: "tenant API answers counted in process (/v1/*; errors are 5xx)",
      earnings: "withdrawn since this process started (fred_withdrawn_amount_total)",
    },
  };
}
