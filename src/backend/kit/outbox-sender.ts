import { type Dispatcher, request } from "undici";
import { signRequest } from "../../auth/hmac.ts";
import { retry, sleepOrAbort, withDeadline } from "../../core/async/index.ts";
import { SIGNATURE_HEADER } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError, isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { Journal, OutboxRow } from "./journal/journal.ts";

/**
 * Delivers committed outbox rows; it never decides what to send. Per lease only the head
 * row is in flight (FIFO), a failing head blocks only its own lease, and a delivery chain
 * is up to three signed POSTs (after 0 s, 1 s, 5 s) inside one deadline. Any 2xx removes
 * exactly that row. One replay loop per process drains at start, on wake and every 30 s,
 * with at most 64 leases sending at once. Callback URLs carry bearer capabilities and are
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
  /** Lifecycle observations older than this are dropped (results never expire); 0 = keep. */
  lifecycleMaxAgeMs?: number;
  onDelivered?: (row: OutboxRow) => void;
  onAttemptFailed?: (row: OutboxRow) => void;
}

export const CALLBACK_BACKOFF_MS = [0, 1_000, 5_000] as const;
export const CALLBACK_CHAIN_DEADLINE_MS = 135_000;
export const CALLBACK_REPLAY_INTERVAL_MS = 30_000;
/**
 * Leases sending at once: as many as the kit's callback dispatcher keeps connections per
 * receiver (64, backend.ts). With 16, a burst's results reached providerd a dozen at a time,
 * so its commits and fsyncs for them were shared by few callbacks each.
 */
export const CALLBACK_CONCURRENCY = 64;
export const LIFECYCLE_MAX_AGE_MS = 24 * 3600_000;
const RESPONSE_READ_LIMIT = 4096;

/** One try that did not end in a 2xx (status 0: no answer); the retry loop tries again. */
class CallbackNotDelivered extends Error {
  constructor(readonly status: number) {
    super(`callback not delivered (${status})`);
  }
}

export class OutboxSender {
  readonly #options: Required<Omit<OutboxSenderOptions, "dispatcher" | "onDelivered" | "onAttemptFailed">> &
    OutboxSenderOptions;
  #state: "idle" | "running" | "stopped" = "idle";
  readonly #abort = new AbortController();
  /** Leases known to hold rows, waiting for a slot (insertion order = fairness). */
  readonly #pending = new Set<string>();
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Leases whose head just failed: left alone until the next timer pass. */
  readonly #backoffUntil = new Map<string, number>();
  #refreshWanted = true;
  #kickScheduled = false;
  /** A wake is waiting for the journal's fsync to fill the free slots. */
  #fillOnDurable = false;
  #cancelTimer: () => void = () => {};
  #idleWaiters: (() => void)[] = [];

  constructor(opts: OutboxSenderOptions) {
    this.#options = {
      attemptTimeoutMs: 10_000,
      backoffMs: CALLBACK_BACKOFF_MS,
      chainDeadlineMs: CALLBACK_CHAIN_DEADLINE_MS,
      replayIntervalMs: CALLBACK_REPLAY_INTERVAL_MS,
      concurrency: CALLBACK_CONCURRENCY,
      lifecycleMaxAgeMs: LIFECYCLE_MAX_AGE_MS,
      ...opts,
    };
  }

  /** Starts the single replay loop: a drain now, then on every wake and every replay interval. */
  start(): void {
    if (this.#state !== "idle") throw new Error("outbox sender already started");
    this.#state = "running";
    this.#armTimer();
    this.#kick();
  }

  /**
   * Non-blocking and coalescing: rows were committed (for `lease`, or anywhere when
   * omitted). A head that just failed is not retried by a wake; it waits for the timer.
   */
  wake(lease?: string): void {
    if (lease === undefined) this.#refreshWanted = true;
    else this.#pending.add(lease);
    if (this.#state !== "running" || this.#fillOnDurable) return;
    // The rows were just written: the fsync that covers them is the one wait before they
    // are sent (a result is never announced before a power loss could no longer undo it).
    // One fill per fsync, however many wakes it covers.
    this.#fillOnDurable = true;
    const fill = () => {
      this.#fillOnDurable = false;
      this.#fill();
    };
    this.#options.journal.durable().then(fill, fill);
  }

  /** Resolves once nothing deliverable is pending or in flight (tests and benchmarks). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.#idleWaiters.push(resolve);
      this.#kick();
    });
  }

  /** Leases sending now and leases waiting for a slot (tests wait on this, not on time). */
  get load(): { inFlight: number; waiting: number } {
    let waiting = 0;
    for (const lease of this.#pending) if (!this.#inFlight.has(lease)) waiting++;
    return { inFlight: this.#inFlight.size, waiting };
  }

  async stop(): Promise<void> {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    this.#cancelTimer();
    this.#abort.abort(new Error("outbox sender stopping"));
    await Promise.allSettled([...this.#inFlight.values()]);
    for (const w of this.#idleWaiters.splice(0)) w();
  }

  #armTimer(): void {
    this.#cancelTimer = this.#options.clock.setTimer(this.#options.replayIntervalMs, () => {
      if (this.#state !== "running") return;
      if (this.#options.lifecycleMaxAgeMs > 0)
        this.#options.journal.expireLifecycle(this.#options.clock.now(), this.#options.lifecycleMaxAgeMs);
      this.#refreshWanted = true;
      this.#backoffUntil.clear();
      this.#armTimer();
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#kickScheduled || this.#state !== "running") return;
    this.#kickScheduled = true;
    setImmediate(() => {
      this.#kickScheduled = false;
      this.#fill();
    });
  }

  /** Starts a drain for waiting leases while slots are free; never two for one lease. */
  #fill(): void {
    if (this.#state !== "running") return;
    if (this.#refreshWanted) {
      this.#refreshWanted = false;
      for (const lease of this.#options.journal.outboxLeases()) this.#pending.add(lease);
    }
    const now = this.#options.clock.now();
    let deliverable = 0;
    for (const lease of this.#pending) {
      if (this.#inFlight.has(lease)) continue;
      const until = this.#backoffUntil.get(lease);
      if (until !== undefined && until > now) continue;
      deliverable++;
      if (this.#inFlight.size >= this.#options.concurrency) break;
      this.#pending.delete(lease);
      const task = this.#drainHead(lease).finally(() => {
        this.#inFlight.delete(lease);
        this.#kick();
      });
      this.#inFlight.set(lease, task);
    }
    if (this.#inFlight.size === 0 && deliverable === 0) for (const w of this.#idleWaiters.splice(0)) w();
  }

  /** Delivers one head of `lease`, then yields its slot so a backlog never starves other leases. */
  async #drainHead(lease: string): Promise<void> {
    const signal = this.#abort.signal;
    try {
      const row = this.#options.journal.outboxHead(lease);
      if (!row) return;
      // Never announce a result that a power loss could undo. A wake already waited for the
      // fsync; a replay or a row written after that fsync started waits here.
      if (!this.#options.journal.allDurable) await this.#options.journal.durable();
      if (await this.#deliver(row, signal)) {
        this.#options.journal.removeDelivered(row);
        this.#options.onDelivered?.(row);
        if (this.#options.journal.hasOutbox(lease)) this.#pending.add(lease);
      } else if (!signal.aborted) {
        this.#backoffUntil.set(lease, this.#options.clock.now() + this.#options.replayIntervalMs);
        this.#pending.add(lease);
      }
    } catch (err) {
      if (!signal.aborted)
        this.#options.logger.error({ err, lease_uuid: lease }, "callback delivery crashed");
    }
  }

  /** This turn's attestation of the journal's identity (deliveries started together share one). */
  #attestation: boolean | undefined;
  #attested(): boolean {
    if (this.#attestation === undefined) {
      this.#attestation = this.#options.journal.attest();
      setImmediate(() => {
        this.#attestation = undefined;
      });
    }
    return this.#attestation;
  }

  /** One attempt chain for one row; true when a 2xx came back. */
  async #deliver(row: OutboxRow, signal: AbortSignal): Promise<boolean> {
    // Made only when something is logged: a child logger serializes its bindings when made.
    let child: Logger | undefined;
    const log = () =>
      (child ??= this.#options.logger.child({
        lease_uuid: row.leaseUuid,
        delivery_id: row.deliveryId,
        kind: row.kind,
      }));
    if (row.storageId !== this.#options.journal.storageId) {
      log().error("outbox row carries another storage id; refusing to send (identity drift)");
      return false;
    }
    if (!this.#attested()) {
      log().error("journal storage identity could not be re-attested; delivery deferred");
      return false;
    }
    const { clock, chainDeadlineMs } = this.#options;
    const timedOut = () =>
      new FredError("ERR_CALLBACK_DELIVERY_TIMEOUT", `callback not delivered within ${chainDeadlineMs} ms`, {
        retryable: true,
      });
    // The schedule is the delay before each try: the first entry is waited out here,
    // the rest are the waits between tries.
    const [first = 0, ...between] = this.#options.backoffMs;
    try {
      await withDeadline(clock, chainDeadlineMs, signal, timedOut, async (chain) => {
        await sleepOrAbort(clock, first, chain);
        await this.#tries(row, chain, between, log);
      });
      return true;
    } catch (err) {
      if (isFredError(err, "ERR_CALLBACK_DELIVERY_TIMEOUT"))
        log().warn({ err }, "callback delivery deadline reached; left to the replay loop");
      return false;
    }
  }

  /** The tries of one delivery chain, `between` apart; resolves on the first 2xx. */
  async #tries(
    row: OutboxRow,
    chain: AbortSignal,
    between: readonly number[],
    log: () => Logger,
  ): Promise<void> {
    await retry(
      async (attempt) => {
        const status = await this.#post(row, chain).catch((err: unknown) => {
          log().warn(
            { attempt, err: (err as Error).message, code: (err as { code?: unknown }).code },
            "callback attempt failed",
          );
          return 0;
        });
        if (status >= 200 && status < 300) return;
        if (status !== 0) log().warn({ attempt, status }, "callback refused");
        this.#options.onAttemptFailed?.(row);
        throw new CallbackNotDelivered(status);
      },
      {
        clock: this.#options.clock,
        attempts: this.#options.backoffMs.length,
        backoff: between.length > 0 ? [...between] : [0],
        signal: chain,
        retryable: () => true,
      },
    );
  }

  async #post(row: OutboxRow, signal: AbortSignal): Promise<number> {
    const url = new URL(row.url);
    const uri = url.pathname + url.search;
    const timestamp = Math.floor(this.#options.clock.now() / 1000);
    const signature = signRequest(this.#options.secret, { method: "POST", uri, body: row.body, timestamp });
    const { clock, attemptTimeoutMs } = this.#options;
    const timedOut = () =>
      new FredError(
        "ERR_CALLBACK_ATTEMPT_TIMEOUT",
        `callback POST: no answer within ${attemptTimeoutMs} ms`,
        {
          retryable: true,
        },
      );
    return withDeadline(clock, attemptTimeoutMs, signal, timedOut, async (attempt) => {
      const res = await request(url, {
        method: "POST",
        headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signature },
        body: row.body,
        signal: attempt,
        dispatcher: this.#options.dispatcher,
      });
      await res.body.dump({ limit: RESPONSE_READ_LIMIT }).catch(() => {});
      return res.statusCode;
    });
  }
}
