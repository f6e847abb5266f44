import type { Clock } from "../clock.ts";
import { FredError } from "../errors.ts";

/**
 * Waiting on the injected Clock, in its one home: the backoff policy and the retry loop
 * (every place that waits and tries again: a deprovision, a reconnect, a chain tx, a
 * callback delivery, startup), and the deadline helpers (every daemon timeout). Tests
 * advance time instead of sleeping, and every wait is cancellable by an AbortSignal.
 */
export interface BackoffPolicy {
  /** Delay before the second try. */
  initialMs: number;
  /** Upper bound of any delay. */
  maxMs: number;
  /** Growth per try (default 2). */
  factor?: number;
  /** ± fraction of each delay drawn at random (default 0: exact delays). */
  jitter?: number;
}

/**
 * A stateful delay sequence: `next()` returns the coming delay and grows the one after;
 * `reset()` starts over (a reconnect loop resets after a healthy connection). A fixed
 * schedule (`readonly number[]`) is followed as given and repeats its last entry.
 */
export class Backoff {
  readonly #policy: BackoffPolicy | readonly number[];
  readonly #random: () => number;
  #step = 0;

  constructor(policy: BackoffPolicy | readonly number[], random: () => number = Math.random) {
    if (Array.isArray(policy) && policy.length === 0) throw new RangeError("backoff schedule is empty");
    this.#policy = policy;
    this.#random = random;
  }

  next(): number {
    const step = this.#step++;
    const p = this.#policy;
    if (isSchedule(p)) return p[Math.min(step, p.length - 1)] as number;
    const base = Math.min(p.initialMs * (p.factor ?? 2) ** step, p.maxMs);
    const jitter = p.jitter ?? 0;
    if (jitter === 0) return base;
    return Math.max(0, Math.round(base * (1 - jitter + 2 * jitter * this.#random())));
  }

  reset(): void {
    this.#step = 0;
  }
}

function isSchedule(p: BackoffPolicy | readonly number[]): p is readonly number[] {
  return Array.isArray(p);
}

export interface RetryOptions {
  clock: Clock;
  /** Total tries, the first included (default: unbounded, until success or abort). */
  attempts?: number;
  backoff: BackoffPolicy | readonly number[];
  signal?: AbortSignal;
  /** Whether a failure may be tried again (default: a FredError's `retryable`, else true). */
  retryable?: (err: unknown) => boolean;
  /** Called before each wait: log it or count it. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  random?: () => number;
}

/** True unless the error is a FredError that says it is not worth another try. */
export function isRetryable(err: unknown): boolean {
  return !(err instanceof FredError) || err.retryable;
}

/**
 * Calls `fn` until it resolves, a failure is not retryable, the tries run out (the last
 * error is thrown) or the signal aborts (see `stopped`). `fn` gets the 1-based try number.
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  const backoff = new Backoff(opts.backoff, opts.random);
  const attempts = opts.attempts ?? Number.POSITIVE_INFINITY;
  const retryable = opts.retryable ?? isRetryable;
  for (let attempt = 1; ; attempt++) {
    throwIfAborted(opts.signal);
    try {
      return await fn(attempt);
    } catch (err) {
      if (opts.signal?.aborted) throwIfAborted(opts.signal);
      if (attempt >= attempts || !retryable(err)) throw err;
      const delay = backoff.next();
      opts.onRetry?.(err, attempt, delay);
      await sleepOrAbort(opts.clock, delay, opts.signal);
    }
  }
}

/** Sleeps on the clock; an abort ends the sleep with `stopped(signal)`. */
export async function sleepOrAbort(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return throwIfAborted(signal);
  try {
    await clock.sleep(ms, signal);
  } catch (err) {
    if (signal?.aborted) throw stopped(signal);
    throw err;
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw stopped(signal);
}

/**
 * Why an aborted signal ended the wait. A deadline (withDeadline) aborts with its own
 * FredError, which keeps its code (a timeout is not a shutdown); any other reason is
 * shutdown or the caller's cancellation, `ERR_ABORTED`.
 */
function stopped(signal: AbortSignal): FredError {
  const reason: unknown = signal.reason;
  if (reason instanceof FredError) return reason;
  return new FredError("ERR_ABORTED", "interrupted by shutdown", { cause: reason });
}

// Deadlines.

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
export function withStallDeadline<T>(
  clock: Clock,
  ms: number,
  parent: AbortSignal | undefined,
  timeoutError: () => Error,
  work: (signal: AbortSignal, progressed: () => void) => Promise<T>,
): Promise<T> {
  // One promise settled by whichever comes first (the work, the deadline, the parent's
  // abort), instead of a race between the work and a second promise: this runs for every
  // backend request, chain query and callback, so its allocations count.
  const controller = new AbortController();
  let settled = false;
  let cancel: () => void;
  let rejectWith!: (reason: unknown) => void;
  const end = (): boolean => {
    if (settled) return false;
    settled = true;
    cancel();
    parent?.removeEventListener("abort", onParent);
    return true;
  };
  const stop = (reason: unknown) => {
    if (!end()) return;
    controller.abort(reason);
    rejectWith(reason);
  };
  const expire = () => stop(timeoutError());
  const onParent = () => stop(parent?.reason);
  const progressed = () => {
    if (settled) return;
    cancel();
    cancel = clock.setTimer(ms, expire);
  };
  return new Promise<T>((resolve, reject) => {
    rejectWith = reject;
    cancel = clock.setTimer(ms, expire);
    if (parent?.aborted) onParent();
    else parent?.addEventListener("abort", onParent);
    let running: Promise<T>;
    try {
      running = work(controller.signal, progressed);
    } catch (err) {
      if (end()) reject(err);
      return;
    }
    running.then(
      (value) => {
        if (end()) resolve(value);
      },
      (err: unknown) => {
        if (end()) reject(err);
      },
    );
  });
}
