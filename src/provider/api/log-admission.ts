import { ApiError, refuse } from "./errors.ts";

/**
 * Admission for `GET …/logs`, whose answers can be large: at most `maxAdmitted` requests
 * (default 9) are inside at once — past that a request is refused at entry with 503 and
 * `Retry-After: 1` — and of those, one at a time holds the response slot, granted in
 * arrival order. Authorization and routing happen before the slot is taken, so a slow
 * chain read never holds response memory another tenant's read needs. A ticket is
 * released only when its response has been written (or the client went away).
 */
export const LOG_MAX_ADMITTED = 9;
/** Content budget of the one materialised log response. */
export const LOG_CONTENT_BUDGET_BYTES = 32 * 1024 * 1024;

export const logCapacity = () =>
  new ApiError("ERR_API_LOGS_BUSY", 503, "log read capacity is exhausted; retry shortly", {
    retryAfterSeconds: 1,
  });

export class LogTicket {
  readonly #admission: LogAdmission;
  #state: "admitted" | "waiting" | "holding" | "released" = "admitted";
  #grant: (() => void) | undefined;

  constructor(admission: LogAdmission) {
    this.#admission = admission;
  }

  /** Waits (FIFO) for the single response slot; an abort while waiting is a 503 timeout. */
  responseSlot(signal: AbortSignal): Promise<void> {
    if (this.#state !== "admitted") return Promise.reject(new Error("response slot already requested"));
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#admission.forget(this);
        reject(refuse.timeout());
      };
      this.#grant = () => {
        signal.removeEventListener("abort", onAbort);
        this.#state = "holding";
        resolve();
      };
      this.#state = "waiting";
      signal.addEventListener("abort", onAbort, { once: true });
      this.#admission.enqueue(this);
    });
  }

  /** @internal called by the admission when this ticket reaches the head of the queue. */
  grant(): void {
    this.#grant?.();
  }

  get holding(): boolean {
    return this.#state === "holding";
  }

  /** Leaves admission (idempotent); hands the response slot on if this ticket held it. */
  release(): void {
    if (this.#state === "released") return;
    const held = this.#state === "holding";
    if (this.#state === "waiting") this.#admission.forget(this);
    this.#state = "released";
    this.#admission.leave(held);
  }
}

export class LogAdmission {
  readonly #maxAdmitted: number;
  #admitted = 0;
  #slotBusy = false;
  readonly #queue: LogTicket[] = [];

  constructor(opts: { maxAdmitted?: number } = {}) {
    this.#maxAdmitted = opts.maxAdmitted ?? LOG_MAX_ADMITTED;
  }

  get admitted(): number {
    return this.#admitted;
  }

  /** Enters admission, or throws the capacity envelope (also for an already-cancelled request). */
  admit(signal: AbortSignal): LogTicket {
    if (signal.aborted || this.#admitted >= this.#maxAdmitted) throw logCapacity();
    this.#admitted++;
    return new LogTicket(this);
  }

  /** @internal */
  enqueue(ticket: LogTicket): void {
    this.#queue.push(ticket);
    this.#next();
  }

  /** @internal a waiting ticket gave up. */
  forget(ticket: LogTicket): void {
    const i = this.#queue.indexOf(ticket);
    if (i >= 0) this.#queue.splice(i, 1);
  }

  /** @internal */
  leave(heldSlot: boolean): void {
    this.#admitted--;
    if (heldSlot) {
      this.#slotBusy = false;
      this.#next();
    }
  }

  #next(): void {
    if (this.#slotBusy) return;
    const head = this.#queue.shift();
    if (head === undefined) return;
    this.#slotBusy = true;
    head.grant();
  }
}
