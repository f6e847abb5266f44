import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";

/**
 * Runs one sweep read with the sweep's deadline on the injected clock, so a hanging backend
 * or chain node is abandoned at the deadline and the read stops too.
 */
export function sweepDeadline<T>(
  clock: Clock,
  ms: number,
  signal: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = () =>
    new FredError("ERR_RECONCILE_DEADLINE", `no answer within ${ms} ms`, { retryable: true });
  return withDeadline(clock, ms, signal, timeout, work);
}
