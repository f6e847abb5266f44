import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";

/**
 * Runs `work` with a signal that aborts at `ms` on the injected clock (or with `signal`), so a
 * hanging backend or chain node is abandoned at the sweep's deadline and the work stops too.
 */
export async function withDeadline<T>(
  clock: Clock,
  ms: number,
  signal: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const cancel = clock.setTimer(ms, () =>
    controller.abort(
      new FredError("ERR_RECONCILE_DEADLINE", `no answer within ${ms} ms`, { retryable: true }),
    ),
  );
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  try {
    const aborted = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason);
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    aborted.catch(() => {});
    return await Promise.race([work(controller.signal), aborted]);
  } finally {
    cancel();
    signal.removeEventListener("abort", onAbort);
  }
}
