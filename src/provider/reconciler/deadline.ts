import { withDeadline, withStallDeadline } from "../../core/async/index.ts";
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

/**
 * A backend's inventory read (both endpoints, every page) within the sweep: abandoned once
 * no page has arrived for `ms`. A hanging backend is given up on `ms` after the sweep
 * asked, while a large inventory that keeps answering is read to its end however long
 * it is (a bound on the whole read would silence the biggest backends first).
 */
export function inventoryDeadline<T>(
  clock: Clock,
  ms: number,
  signal: AbortSignal,
  work: (signal: AbortSignal, progressed: () => void) => Promise<T>,
): Promise<T> {
  const timeout = () =>
    new FredError("ERR_RECONCILE_DEADLINE", `no inventory page within ${ms} ms`, { retryable: true });
  return withStallDeadline(clock, ms, signal, timeout, work);
}
