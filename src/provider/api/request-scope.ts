import type { FastifyReply } from "fastify";
import type { Clock } from "../../core/clock.ts";
import { refuse } from "./errors.ts";

/**
 * One tenant request's lifetime: an AbortSignal that fires when the client goes away or
 * the request deadline passes (backend and chain reads take it, so abandoned work stops),
 * and `run`, which answers 503 "request timeout" when the deadline wins.
 */
export class RequestScope {
  readonly #controller = new AbortController();
  readonly #cancelTimer: () => void;
  #expired = false;
  #done = false;

  constructor(reply: FastifyReply, clock: Clock, deadlineMs: number) {
    this.#cancelTimer = clock.setTimer(deadlineMs, () => {
      this.#expired = true;
      this.#controller.abort(refuse.timeout());
    });
    // After the answer is written nothing of this request is left to stop: skipping the
    // abort there spares an Error and an event dispatch on every request.
    reply.raw.once("close", () => {
      this.#cancelTimer();
      if (!this.#done) this.#controller.abort(new Error("client went away"));
    });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#expired;
  }

  /** Runs `work`; if the deadline passes first, rejects with the 503 timeout envelope. */
  async run<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = this.#controller.signal;
    if (signal.aborted) throw this.#expired ? refuse.timeout() : signal.reason;
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(this.#expired ? refuse.timeout() : signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    const working = work(signal);
    // If the deadline wins, the abandoned work's own failure must not go unhandled.
    working.catch(() => {});
    try {
      return await Promise.race([working, aborted]);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Stops the deadline timer once the answer is written; the request's signal then stays unaborted. */
  done(): void {
    this.#done = true;
    this.#cancelTimer();
  }
}
