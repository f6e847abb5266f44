/**
 * The consecutive-failure budget of a lease (README seed, `terminal_budget`): how many
 * failures of the tenant's own workload came in a row, and whether the provider should
 * now stop re-provisioning and close the lease. Pure: the journal keeps the streak in the
 * lease row and calls these at each transition with the kit's clock.
 *
 * - Only the tenant's own workload failing counts (it ran and exited, or never passed its
 *   health check). Platform failures (host lost the workload, interrupted or timed-out
 *   provisioning, image pulls, a runtime that refused to start, internal errors) and
 *   restarts or updates never count, and they do not break a streak either.
 * - Exhausted only by the third or later counted failure at least 30 minutes after the
 *   streak's first, so a burst of failures (an outage) never closes a lease by itself.
 * - A restart or update the tenant requests resets the streak.
 * - Once the lease has stayed ready for ten minutes, its next failure starts a fresh streak.
 * The recorded count and verdict do not change with time between transitions.
 */
export const BUDGET_LIMITS = {
  failures: 3,
  streakMs: 30 * 60_000,
  freshAfterReadyMs: 10 * 60_000,
} as const;

/** Failure reasons that are the tenant's workload failing on its own. */
const OWN_WORKLOAD_REASONS: ReadonlySet<string> = new Set(["ContainerExited", "HealthCheckFailed"]);

export interface FailureStreak {
  /** Counted failures in the current streak. */
  failures: number;
  /** When the streak's first counted failure was recorded; undefined while there is none. */
  startedAtMs: number | undefined;
  /** The verdict recorded with the last counted failure. */
  exhausted: boolean;
  /** Since when the lease has been ready without interruption; undefined while it is not. */
  readySinceMs: number | undefined;
}

export const NO_STREAK: FailureStreak = Object.freeze({
  failures: 0,
  startedAtMs: undefined,
  exhausted: false,
  readySinceMs: undefined,
});

export function countsTowardBudget(reason: string): boolean {
  return OWN_WORKLOAD_REASONS.has(reason);
}

/** The lease became ready at `nowMs` (a provision succeeded). */
export function afterReady(s: FailureStreak, nowMs: number): FailureStreak {
  return { ...s, readySinceMs: s.readySinceMs ?? nowMs };
}

/**
 * A failure was recorded at `nowMs`; the lease is no longer ready. `platform` is the
 * substrate saying the platform caused it, whatever the reason.
 */
export function afterFailure(
  s: FailureStreak,
  failure: { reason: string; platform?: boolean },
  nowMs: number,
): FailureStreak {
  const fresh = s.readySinceMs !== undefined && nowMs - s.readySinceMs >= BUDGET_LIMITS.freshAfterReadyMs;
  const base = fresh ? NO_STREAK : s;
  if (failure.platform === true || !countsTowardBudget(failure.reason))
    return { ...base, readySinceMs: undefined };
  const failures = base.failures + 1;
  const startedAtMs = base.startedAtMs ?? nowMs;
  return {
    failures,
    startedAtMs,
    exhausted: failures >= BUDGET_LIMITS.failures && nowMs - startedAtMs >= BUDGET_LIMITS.streakMs,
    readySinceMs: undefined,
  };
}

/** A restart or update the tenant requested: the streak starts over. */
export function afterRequestedRestart(s: FailureStreak): FailureStreak {
  return { ...NO_STREAK, readySinceMs: s.readySinceMs };
}

/** The contract's `terminal_budget` of a streak. */
export function budgetView(s: FailureStreak): {
  verdict: "retry" | "exhausted";
  consecutive_failures: number;
} {
  return { verdict: s.exhausted ? "exhausted" : "retry", consecutive_failures: s.failures };
}
