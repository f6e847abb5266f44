import { type ReleaseStack, withDeadline } from "../core/async/index.ts";
import type { Clock } from "../core/clock.ts";
import { FredError } from "../core/errors.ts";
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
    const timedOut = () =>
      new FredError("ERR_SHUTDOWN_RELEASE_TIMEOUT", `releases did not finish within ${deadlineMs} ms`);
    try {
      // Each failed release was logged by the stack's reporter; the rest still ran.
      await withDeadline(clock, deadlineMs, undefined, timedOut, () => releases.close().catch(() => {}));
    } catch (err) {
      logger.warn({ err }, "shutdown_timeout reached; closing the rest forcibly");
    }
  } finally {
    clearInterval(keepAlive);
  }
}
