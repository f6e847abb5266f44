/**
 * The rules of deploy/prometheus/fred-alerts.yml that can be judged from providerd's own
 * state without a time series (no rate or increase), evaluated now for the overview. The
 * YAML's `for:` durations are not waited out here: an alert listed is one whose condition
 * holds now (Prometheus would page once it has held that long). Every name below exists in
 * the rules file (test/provider/dashboard/alerts-now.test.ts checks names and severities).
 */
export interface AlertNow {
  name: string;
  severity: "page" | "warn";
  summary: string;
}

export interface AlertInputs {
  nowMs: number;
  /** providerd's start, standing in for "never succeeded" (the gauge's 0 would fire at once). */
  startedAtMs: number;
  /** When the event feed last saw a new block (0: never). */
  lastBlockAtMs: number;
  /** By backend: did it answer the latest sweep (fenced: false)? */
  backendHealthy: ReadonlyMap<string, boolean>;
  /** End of the latest complete reconciler sweep. */
  lastSweepSuccessAtMs: number | undefined;
}

/** The rules evaluated in process, with their severity as the YAML file states it. */
export const IN_PROCESS_RULES = {
  FredChainFeedStalled: "page",
  FredBackendUnhealthy: "page",
  FredReconcilerNotSucceeding: "warn",
} as const;

/** FredChainFeedStalled: fred_chain_lag_seconds > 120. */
const FEED_STALL_SECONDS = 120;
/** FredReconcilerNotSucceeding: three default intervals (3 × 300 s) without a complete sweep. */
const RECONCILER_SILENCE_SECONDS = 3 * 300;

export function alertsNow(i: AlertInputs): AlertNow[] {
  const out: AlertNow[] = [];
  if (i.lastBlockAtMs !== 0) {
    const lag = (i.nowMs - i.lastBlockAtMs) / 1000;
    if (lag > FEED_STALL_SECONDS)
      out.push({
        name: "FredChainFeedStalled",
        severity: IN_PROCESS_RULES.FredChainFeedStalled,
        summary: `providerd has seen no new block for ${Math.round(lag)}s`,
      });
  }
  for (const [backend, healthy] of i.backendHealthy) {
    if (!healthy)
      out.push({
        name: "FredBackendUnhealthy",
        severity: IN_PROCESS_RULES.FredBackendUnhealthy,
        summary: `backend ${backend} is unhealthy or fenced`,
      });
  }
  const since = (i.nowMs - (i.lastSweepSuccessAtMs ?? i.startedAtMs)) / 1000;
  if (since > RECONCILER_SILENCE_SECONDS)
    out.push({
      name: "FredReconcilerNotSucceeding",
      severity: IN_PROCESS_RULES.FredReconcilerNotSucceeding,
      summary: `no complete reconciler sweep for ${Math.round(since)}s`,
    });
  return out;
}
