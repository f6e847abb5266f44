import type { Clock } from "../clock.ts";

/**
 * The one deadline helper: runs `work` with a signal that aborts when `parent` does or when
 * `ms` elapse on the injected clock, and stops waiting at that moment even if `work`
 * ignores its signal (a hanging peer is abandoned, not awaited). A timeout rejects with
 * `timeoutError()`, so each caller names its own failure.
 */
export async function withDeadline<T>(
  clock: Clock,
  ms: number,
  parent: AbortSignal,
  timeoutError: () => Error,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const cancel = clock.setTimer(ms, () => controller.abort(timeoutError()));
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener("abort", onParent, { once: true });
  try {
    const aborted = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason);
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    aborted.catch(() => {});
    return await Promise.race([work(controller.signal), aborted]);
  } finally {
    cancel();
    parent.removeEventListener("abort", onParent);
  }
}
