import { type Dispatcher, request } from "undici";
import { signRequest } from "../../auth/hmac.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { Journal, OutboxRow } from "./journal/journal.ts";

/**
 * Delivers committed outbox rows; it never decides what to send. Per lease only the head
 * row is in flight (FIFO), a failing head blocks only its own lease, and a delivery chain
 * is up to three signed POSTs (after 0 s, 1 s, 5 s) inside one deadline. Any 2xx removes
 * exactly that row. One replay loop per process drains at start, on wake and every 30 s,
 * with at most 16 leases sending at once. Callback URLs carry bearer capabilities and are
 * never logged.
 */
export interface OutboxSenderOptions {
  journal: Journal;
  /** HMAC key used to sign callbacks. */
  secret: Buffer;
  clock: Clock;
  logger: Logger;
  dispatcher?: Dispatcher;
  /** Per-attempt timeout (MOCK_BACKEND_CLIENT_TIMEOUT). */
  attemptTimeoutMs?: number;
  backoffMs?: readonly number[];
  chainDeadlineMs?: number;
  replayIntervalMs?: number;
  concurrency?: number;
  onDelivered?: (row: OutboxRow) => void;
  onAttemptFailed?: (row: OutboxRow) => void;
}

export const CALLBACK_BACKOFF_MS = [0, 1_000, 5_000] as const;
export const CALLBACK_CHAIN_DEADLINE_MS = 135_000;
export const CALLBACK_REPLAY_INTERVAL_MS = 30_000;
export const CALLBACK_CONCURRENCY = 16;
const RESPONSE_READ_LIMIT = 4096;

type LoopState =
  | { kind: "idle" }
  | { kind: "running"; abort: AbortController; done: Promise<void> }
  | { kind: "stopped" };

export class OutboxSender {
  readonly #o: Required<Omit<OutboxSenderOptions, "dispatcher" | "onDelivered" | "onAttemptFailed">> &
    OutboxSenderOptions;
  #state: LoopState = { kind: "idle" };
  #woken = false;
  #wakeWaiter: (() => void) | undefined;
  /** Leases whose head just failed: not retried before this time except by the timer pass. */
  readonly #backoffUntil = new Map<string, number>();
  #idleWaiters: (() => void)[] = [];

  constructor(opts: OutboxSenderOptions) {
    this.#o = {
      attemptTimeoutMs: 10_000,
      backoffMs: CALLBACK_BACKOFF_MS,
      chainDeadlineMs: CALLBACK_CHAIN_DEADLINE_MS,
      replayIntervalMs: CALLBACK_REPLAY_INTERVAL_MS,
      concurrency: CALLBACK_CONCURRENCY,
      ...opts,
    };
  }

  start(): void {
    if (this.#state.kind !== "idle") throw new Error("outbox sender already started");
    const abort = new AbortController();
    const done = this.#loop(abort.signal).catch((err) => {
      if (!abort.signal.aborted) this.#o.logger.error({ err }, "outbox replay loop stopped");
    });
    this.#state = { kind: "running", abort, done };
  }

  /** Non-blocking, coalescing: a committed row is waiting. */
  wake(): void {
    this.#woken = true;
    this.#wakeWaiter?.();
  }

  /** Resolves when a pass finds nothing deliverable (tests and benchmarks wait on this). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    const s = this.#state;
    this.#state = { kind: "stopped" };
    if (s.kind !== "running") return;
    s.abort.abort(new Error("outbox sender stopping"));
    this.#wakeWaiter?.();
    await s.done;
  }

  async #loop(signal: AbortSignal): Promise<void> {
    let timerPass = true;
    while (!signal.aborted) {
      this.#woken = false;
      await this.#pass(signal, timerPass);
      if (signal.aborted) return;
      if (this.#woken) {
        timerPass = false;
        continue;
      }
      for (const w of this.#idleWaiters.splice(0)) w();
      timerPass = await this.#waitForWakeOrInterval(signal);
    }
  }

  /** Resolves true when the replay interval elapsed, false when woken. */
  #waitForWakeOrInterval(signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = this.#o.clock.setTimer(this.#o.replayIntervalMs, () => finish(true));
      const finish = (byTimer: boolean) => {
        cancel();
        this.#wakeWaiter = undefined;
        resolve(byTimer);
      };
      this.#wakeWaiter = () => finish(false);
      if (signal.aborted || this.#woken) finish(false);
    });
  }

  async #pass(signal: AbortSignal, timerPass: boolean): Promise<void> {
    const now = this.#o.clock.now();
    const queue = this.#o.journal.outboxLeases().filter((lease) => {
      const until = this.#backoffUntil.get(lease);
      return until === undefined || timerPass || until <= now;
    });
    if (timerPass) this.#backoffUntil.clear();
    const worker = async () => {
      for (let lease = queue.shift(); lease !== undefined && !signal.aborted; lease = queue.shift()) {
        const row = this.#o.journal.outboxHead(lease);
        if (!row) continue;
        const delivered = await this.#deliver(row, signal);
        if (delivered) {
          this.#o.journal.removeDelivered(row);
          this.#o.onDelivered?.(row);
          // Yield after one head so a backlog never starves fresh leases.
          if (this.#o.journal.outboxHead(lease)) queue.push(lease);
        } else if (!signal.aborted) {
          this.#backoffUntil.set(lease, this.#o.clock.now() + this.#o.replayIntervalMs);
        }
      }
    };
    await Promise.all(Array.from({ length: this.#o.concurrency }, worker));
  }

  /** One attempt chain for one row; true when a 2xx came back. */
  async #deliver(row: OutboxRow, signal: AbortSignal): Promise<boolean> {
    const log = this.#o.logger.child({
      lease_uuid: row.leaseUuid,
      delivery_id: row.deliveryId,
      kind: row.kind,
    });
    if (row.storageId !== this.#o.journal.storageId) {
      log.error("outbox row carries another storage id; refusing to send (identity drift)");
      return false;
    }
    const deadline = new AbortController();
    const cancelDeadline = this.#o.clock.setTimer(this.#o.chainDeadlineMs, () =>
      deadline.abort(new Error("callback delivery deadline")),
    );
    const chain = AbortSignal.any([signal, deadline.signal]);
    try {
      for (const [attempt, delay] of this.#o.backoffMs.entries()) {
        if (delay > 0) await this.#o.clock.sleep(delay, chain);
        if (chain.aborted) return false;
        const status = await this.#post(row, chain).catch((err: unknown) => {
          log.warn({ attempt: attempt + 1, err: (err as Error).message }, "callback attempt failed");
          return 0;
        });
        if (status >= 200 && status < 300) return true;
        if (status !== 0) log.warn({ attempt: attempt + 1, status }, "callback refused");
        this.#o.onAttemptFailed?.(row);
      }
      return false;
    } catch {
      return false;
    } finally {
      cancelDeadline();
    }
  }

  async #post(row: OutboxRow, signal: AbortSignal): Promise<number> {
    const url = new URL(row.url);
    const uri = url.pathname + url.search;
    const timestamp = Math.floor(this.#o.clock.now() / 1000);
    const signature = signRequest(this.#o.secret, { method: "POST", uri, body: row.body, timestamp });
    const attempt = AbortSignal.any([signal, AbortSignal.timeout(this.#o.attemptTimeoutMs)]);
    const res = await request(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-fred-signature": signature },
      body: row.body,
      signal: attempt,
      dispatcher: this.#o.dispatcher,
    });
    await res.body.dump({ limit: RESPONSE_READ_LIMIT }).catch(() => {});
    return res.statusCode;
  }
}
