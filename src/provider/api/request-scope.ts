import type { FastifyReply } from "fastify";
import type { Clock } from "../../core/clock.ts";
import { refuse } from "./errors.ts";

/**
 * One tenant request's lifetime: an AbortSignal that fires when the client goes away or
 * the request deadline passes (backend and chain reads take it, so abandoned work stops),
 * and `run`, which answers 503 "request timeout" when the deadline wins.
 * The controller is made only when a handler asks for the signal, and `run` is told of an
 * abort directly rather than through an event listener: most requests end before either
 * could matter, and both cost an allocation and an event dispatch on every request.
 */
export class RequestScope {
  #controller: AbortController | undefined;
  readonly #cancelTimer: () => void;
  /** Why the request was abandoned (set once, by the deadline or the client's close). */
  #reason: Error | undefined;
  #expired = false;
  #done = false;
  #onAbort: ((reason: Error) => void) | undefined;

  constructor(reply: FastifyReply, clock: Clock, deadlineMs: number) {
    this.#cancelTimer = clock.setTimer(deadlineMs, () => {
      this.#expired = true;
      this.#abort(refuse.timeout());
    });
    // After the answer is written nothing of this request is left to stop: skipping the
    // abort there spares an Error and an event dispatch on every request.
    reply.raw.once("close", () => {
      this.#cancelTimer();
      if (!this.#done) this.#abort(new Error("client went away"));
    });
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#expired;
  }

  /**
   * Runs `work`; if the deadline passes first, rejects with the 503 timeout envelope.
   * One promise settled by whichever comes first (not a race of two): this runs on every
   * tenant request. The abandoned work's own later failure lands in its handler, so it
   * never goes unhandled.
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#reason !== undefined) return Promise.reject(this.#failure(this.#reason));
    return new Promise<T>((resolve, reject) => {
      this.#onAbort = (reason) => reject(this.#failure(reason));
      work().then(
        (value) => {
          this.#onAbort = undefined;
          resolve(value);
        },
        (err: unknown) => {
          this.#onAbort = undefined;
          reject(err);
        },
      );
    });
  }

  /** Stops the deadline timer once the answer is written; the request's signal then stays unaborted. */
  done(): void {
    this.#done = true;
    this.#cancelTimer();
  }

  #abort(reason: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#onAbort?.(reason);
  }

  #failure(reason: Error): Error {
    return this.#expired ? refuse.timeout() : reason;
  }
}
