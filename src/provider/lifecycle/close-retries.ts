import { Admission, Backoff, type BackoffPolicy } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";

/**
 * Closes that did not go through (a backend did not confirm its deprovision) are tried
 * again from here, not only at the reconciler's next sweep, as the reference does:
 * - at most CLOSE_RETRY_WORKERS closes run at once;
 * - at most CLOSE_RETRY_HINTS leases are remembered; a hint for one already remembered
 *   coalesces into it, and one past the cap is dropped (counted, logged) and left to the
 *   sweep, which re-reads every ended lease anyway;
 * - each lease waits with doubling delays (CLOSE_RETRY_BACKOFF) between tries and is
 *   forgotten after CLOSE_RETRY_ATTEMPTS of them (the sweep again) or on success.
 * A lease waiting for its next try holds no worker, so four stuck backends cannot stall
 * the closes of the others.
 */
export const CLOSE_RETRY_WORKERS = 4;
export const CLOSE_RETRY_HINTS = 1_024;
export const CLOSE_RETRY_ATTEMPTS = 8;
export const CLOSE_RETRY_BACKOFF: BackoffPolicy = { initialMs: 5_000, maxMs: 300_000, jitter: 0.1 };

export interface CloseRetryOptions {
  clock: Clock;
  logger: Logger;
  /** One close of an ended lease; true when every backend that may hold it confirmed. */
  close: (leaseUuid: string) => Promise<boolean>;
  /** A hint dropped at the cap. */
  onDropped?: () => void;
  workers?: number;
  hints?: number;
  attempts?: number;
  backoff?: BackoffPolicy;
}

interface Hint {
  tries: number;
  backoff: Backoff;
  cancelTimer: (() => void) | undefined;
}

export class CloseRetries {
  readonly #options: Required<Omit<CloseRetryOptions, "onDropped">> & Pick<CloseRetryOptions, "onDropped">;
  readonly #hints = new Map<string, Hint>();
  readonly #workers: Admission<Hint>;
  #stopped = false;

  constructor(opts: CloseRetryOptions) {
    this.#options = {
      workers: CLOSE_RETRY_WORKERS,
      hints: CLOSE_RETRY_HINTS,
      attempts: CLOSE_RETRY_ATTEMPTS,
      backoff: CLOSE_RETRY_BACKOFF,
      ...opts,
    };
    this.#workers = new Admission(this.#options.workers, (lease, hint, release) => {
      void this.#try(lease, hint).finally(release);
    });
  }

  /** Remembers a close to try again. False when dropped at the cap (the sweep has it). */
  hint(leaseUuid: string): boolean {
    if (this.#stopped) return false;
    if (this.#hints.has(leaseUuid)) return true;
    if (this.#hints.size >= this.#options.hints) {
      this.#options.onDropped?.();
      this.#options.logger.warn(
        { lease_uuid: leaseUuid, held: this.#hints.size },
        "close retry queue full; the close is left to the next reconciler sweep",
      );
      return false;
    }
    const hint: Hint = { tries: 0, backoff: new Backoff(this.#options.backoff), cancelTimer: undefined };
    this.#hints.set(leaseUuid, hint);
    this.#wait(leaseUuid, hint);
    return true;
  }

  /** Leases remembered (waiting or being tried). */
  get size(): number {
    return this.#hints.size;
  }

  stop(): void {
    this.#stopped = true;
    for (const hint of this.#hints.values()) hint.cancelTimer?.();
    this.#hints.clear();
    this.#workers.clear();
  }

  #wait(leaseUuid: string, hint: Hint): void {
    hint.cancelTimer = this.#options.clock.setTimer(hint.backoff.next(), () => {
      hint.cancelTimer = undefined;
      if (this.#hints.get(leaseUuid) === hint) this.#workers.add(leaseUuid, hint);
    });
  }

  async #try(leaseUuid: string, hint: Hint): Promise<void> {
    if (this.#stopped) return;
    hint.tries++;
    let done = false;
    try {
      done = await this.#options.close(leaseUuid);
    } catch (err) {
      this.#options.logger.warn({ err, lease_uuid: leaseUuid, try: hint.tries }, "close retry failed");
    }
    if (this.#stopped || this.#hints.get(leaseUuid) !== hint) return;
    if (done || hint.tries >= this.#options.attempts) {
      this.#hints.delete(leaseUuid);
      if (!done)
        this.#options.logger.warn(
          { lease_uuid: leaseUuid, tries: hint.tries },
          "close still not confirmed after its retries; left to the reconciler sweep",
        );
      return;
    }
    this.#wait(leaseUuid, hint);
  }
}
