import type { ReleaseStack } from "../core/async/index.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../log.ts";

/**
 * providerd's two-phase shutdown. Phase 1, `drain`: stop intake and drain lease work (its
 * own bound is shutdown_timeout). Phase 2: release everything in reverse order; past
 * `deadlineMs`, whatever is still closing is abandoned (the process is about to exit).
 */
export async function shutDown(
  releases: ReleaseStack,
  drain: () => Promise<void>,
  deadlineMs: number,
  clock: Clock,
  logger: Logger,
): Promise<void> {
  // Timers from the Clock are unref'd (a daemon must not be held open by them); while
  // shutting down, this handle keeps the process alive until the sequence finishes.
  const keepAlive = setInterval(() => {}, 1_000);
  try {
    await drain();
    let cancel: (() => void) | undefined;
    const deadline = new Promise<void>((resolve) => {
      cancel = clock.setTimer(deadlineMs, () => {
        logger.warn("shutdown_timeout reached; closing the rest forcibly");
        resolve();
      });
    });
    // Each failed release was logged by the stack's reporter; the rest still ran.
    await Promise.race([releases.close().catch(() => {}), deadline]);
    cancel?.();
  } finally {
    clearInterval(keepAlive);
  }
}
