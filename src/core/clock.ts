/**
 * The time seam. Every "now" and every timer in the codebase goes through a Clock so
 * tests of expiry, retries and schedules advance time instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `fn` after `ms`; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const handle = setTimeout(fn, ms);
    handle.unref?.();
    return () => clearTimeout(handle);
  },
  sleep(ms, signal) {
    return sleepWith(systemClock, ms, signal);
  },
};

/**
 * The system clock, with ref'd timers: systemClock's are unref'd so they never keep a daemon
 * alive, but a one-shot command waiting on one (a tx's inclusion, a retry's backoff) has
 * nothing else keeping Node running.
 */
export const commandClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const handle = setTimeout(fn, ms);
    return () => clearTimeout(handle);
  },
  sleep(ms, signal) {
    return sleepWith(commandClock, ms, signal);
  },
};

/** A clock that moves only when told to; timers fire in due order during `advance`. */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers = new Map<number, { due: number; fn: () => void }>();

  constructor(startMs = Date.UTC(2025, 0, 1)) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const id = ++this.#seq;
    this.#timers.set(id, { due: this.#now + Math.max(0, ms), fn });
    return () => this.#timers.delete(id);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }

  /** Number of timers still waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, earliest first. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let nextId: number | undefined;
      let next: { due: number; fn: () => void } | undefined;
      for (const [id, t] of this.#timers) {
        if (t.due <= target && (next === undefined || t.due < next.due)) {
          nextId = id;
          next = t;
        }
      }
      if (next === undefined || nextId === undefined) break;
      this.#timers.delete(nextId);
      this.#now = next.due;
      next.fn();
    }
    this.#now = target;
  }

  set(ms: number): void {
    this.#now = ms;
  }
}
