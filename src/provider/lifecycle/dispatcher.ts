import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";

/**
 * A small typed in-process dispatcher: handlers subscribe to a message type, and each
 * handler retries on its own (backoff from the injected Clock) without holding up the
 * others. Only retryable failures are retried; a handler that still fails is logged and
 * counted, and the message is left to the next recovery pass.
 */
export interface RetryPolicy {
  /** Total tries, including the first. */
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, initialDelayMs: 500, maxDelayMs: 10_000 };

type Handler<T> = { name: string; fn: (msg: T, signal: AbortSignal) => Promise<void>; retry: RetryPolicy };

export interface DispatchStats {
  handled: number;
  retried: number;
  failed: number;
}

export function isRetryable(err: unknown): boolean {
  return !(err instanceof FredError) || err.retryable;
}

export class Dispatcher<M extends Record<string, unknown>> {
  readonly #handlers = new Map<keyof M, Handler<never>[]>();
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #signal: AbortSignal;
  readonly stats: DispatchStats = { handled: 0, retried: 0, failed: 0 };

  constructor(opts: { clock: Clock; logger: Logger; signal: AbortSignal }) {
    this.#clock = opts.clock;
    this.#logger = opts.logger;
    this.#signal = opts.signal;
  }

  on<K extends keyof M>(
    type: K,
    name: string,
    fn: (msg: M[K], signal: AbortSignal) => Promise<void>,
    retry: RetryPolicy = DEFAULT_RETRY,
  ): void {
    const list = this.#handlers.get(type) ?? [];
    list.push({ name, fn, retry } as Handler<never>);
    this.#handlers.set(type, list);
  }

  /** Runs every handler of `type`; resolves when all have succeeded or given up. */
  async dispatch<K extends keyof M>(type: K, msg: M[K]): Promise<void> {
    const list = (this.#handlers.get(type) ?? []) as Handler<M[K]>[];
    await Promise.all(list.map((h) => this.#runHandler(String(type), h, msg)));
  }

  async #runHandler<T>(type: string, h: Handler<T>, msg: T): Promise<void> {
    let delay = h.retry.initialDelayMs;
    for (let attempt = 1; ; attempt++) {
      if (this.#signal.aborted) return;
      try {
        await h.fn(msg, this.#signal);
        this.stats.handled++;
        return;
      } catch (err) {
        if (this.#signal.aborted) return;
        if (attempt >= h.retry.attempts || !isRetryable(err)) {
          this.stats.failed++;
          this.#logger.warn({ err, type, handler: h.name, attempt }, "handler gave up");
          return;
        }
        this.stats.retried++;
        this.#logger.debug({ err, type, handler: h.name, attempt, delay }, "handler will retry");
        try {
          await this.#clock.sleep(delay, this.#signal);
        } catch {
          return;
        }
        delay = Math.min(delay * 2, h.retry.maxDelayMs);
      }
    }
  }
}
