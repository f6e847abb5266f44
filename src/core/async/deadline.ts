import type { Clock } from "../clock.ts";

/**
 * The one deadline helper: runs `work` with a signal that aborts when `parent` does or when
 * `ms` elapse on the injected clock, and stops waiting at that moment even if `work`
 * ignores its signal (a hanging peer is abandoned, not awaited). A timeout rejects with
 * `timeoutError()`, so each caller names its own failure. `parent` is undefined where only
 * the deadline can stop the work (a probe, a shutdown phase).
 */
export function withDeadline<T>(
  clock: Clock,
  ms: number,
  parent: AbortSignal | undefined,
  timeoutError: () => Error,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return withStallDeadline(clock, ms, parent, timeoutError, (signal) => work(signal));
}

/**
 * withDeadline for a read of many parts (the pages of an inventory): `work` calls
 * `progressed()` whenever a part arrives, and the `ms` count from there. A long read that
 * keeps moving is never cut off by its size; one that stops is abandoned `ms` after its
 * last progress.
 */
export async function withStallDeadline<T>(
  clock: Clock,
  ms: number,
  parent: AbortSignal | undefined,
  timeoutError: () => Error,
  work: (signal: AbortSignal, progressed: () => void) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const expire = () => controller.abort(timeoutError());
  let cancel = clock.setTimer(ms, expire);
  const progressed = () => {
    if (controller.signal.aborted) return;
    cancel();
    cancel = clock.setTimer(ms, expire);
  };
  const onParent = () => controller.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener("abort", onParent, { once: true });
  try {
    const aborted = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason);
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    aborted.catch(() => {});
    return await Promise.race([work(controller.signal, progressed), aborted]);
  } finally {
    cancel();
    parent?.removeEventListener("abort", onParent);
  }
}
