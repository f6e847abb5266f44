/**
 * The one acknowledgement path: providerd's lease acknowledgements and rejections, from
 * any lease, coalesced into batched transactions. Requests wait in one queue; a batch is
 * cut when it reaches `maxBatch` (size flush) or when the oldest request has waited
 * `maxWaitMs` (time flush), and handed to the next free lane (round robin). Each lane
 * has at most one tx in flight, so lanes map onto signers (the provider key, or authz
 * sub-signers) without racing a sequence. A batch is grouped here, once: its acknowledgements in one call,
 * its rejections one call per reason. A lease submitted again while its request is
 * queued, in flight or waiting to be resubmitted shares that request's outcome.
 *
 * Which failure each remaining retry covers (nothing else retries a lease tx):
 *
 * | failure class                                  | retried by      | how                                |
 * |------------------------------------------------|-----------------|------------------------------------|
 * | account sequence mismatch (another sender)     | TxPipeline      | re-sign at the expected sequence   |
 * | out of gas (CheckTx or in the block)           | TxPipeline      | gas × 1.5, capped by max_gas_limit |
 * | node unreachable, nothing sent                 | TxPipeline      | Backoff 1 s, 3 s within tx_timeout |
 * |   (the three above share ≤ 3 tries per tx)     |                 |                                    |
 * | a lease of the batch in the wrong state        | CosmosChain     | re-read each lease, resend those   |
 * |   (a batch message is atomic)                  |   (#sendGroup)  |   still eligible, ≤ 2 more rounds  |
 * | the whole tx, retryable: tries exhausted,      | this batcher    | resubmit the lease after 2 s, 4 s, |
 * |   ERR_TX_TIMEOUT (fate unknown), node down     |                 |   6 s (it joins a new batch)       |
 * | anything left (not retryable, shutdown)        | recovery pass   | a PENDING lease whose backend says |
 * |                                                |                 |   ready is acknowledged again      |
 *
 * A resubmitted ERR_TX_TIMEOUT lease whose first tx did land comes back `already_done`
 * (the adapter's re-read), never a second state change. Time comes from the Clock.
 */
import { retry } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import type { ChainPort, LeaseOutcome } from "../port.ts";

export type AckRequest =
  | { kind: "acknowledge"; leaseUuid: string }
  | { kind: "reject"; leaseUuid: string; reason: string };

export interface AckBatcherOptions {
  /** Sends the batches; `lane` picks the signer. */
  chain: Pick<ChainPort, "acknowledge" | "reject">;
  clock: Clock;
  logger?: Logger;
  lanes?: number;
  /** Default 1,000: one batch fills one adapter tx (10 messages × 100 leases). */
  maxBatch?: number;
  maxWaitMs?: number;
  /** Requests allowed to wait at once; beyond it submit() refuses (back-pressure). */
  maxQueued?: number;
  /** Waits before each resubmission of a retryable failure (default 2 s, 4 s, 6 s). */
  resubmitDelaysMs?: readonly number[];
}

interface Pending {
  req: AckRequest;
  resolve: (o: LeaseOutcome) => void;
  enqueuedAt: number;
}

export interface AckBatcherStats {
  queued: number;
  inFlight: number;
  flushes: number;
  sizeFlushes: number;
  timeFlushes: number;
}

export class AckBatcher {
  readonly #chain: AckBatcherOptions["chain"];
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  readonly #lanes: boolean[];
  readonly #maxBatch: number;
  readonly #maxWaitMs: number;
  readonly #maxQueued: number;
  readonly #resubmitDelays: readonly number[];
  #queue: Pending[] = [];
  /** Every lease with a request alive (queued, in flight or waiting to be resubmitted). */
  readonly #requests = new Map<string, Promise<LeaseOutcome>>();
  #cancelTimer: (() => void) | undefined;
  #cursor = 0;
  #closed = false;
  readonly #abort = new AbortController();
  readonly #inFlight = new Set<Promise<void>>();
  readonly stats: AckBatcherStats = { queued: 0, inFlight: 0, flushes: 0, sizeFlushes: 0, timeFlushes: 0 };

  constructor(opts: AckBatcherOptions) {
    this.#chain = opts.chain;
    this.#clock = opts.clock;
    this.#logger = opts.logger;
    const lanes = opts.lanes ?? 1;
    this.#maxBatch = opts.maxBatch ?? 1_000;
    this.#maxWaitMs = opts.maxWaitMs ?? 500;
    this.#maxQueued = opts.maxQueued ?? 100_000;
    this.#resubmitDelays = opts.resubmitDelaysMs ?? [2_000, 4_000, 6_000];
    if (!Number.isInteger(lanes) || lanes < 1)
      throw new FredError("ERR_CONFIG", "ack batcher needs ≥ 1 lane");
    if (!Number.isInteger(this.#maxBatch) || this.#maxBatch < 1)
      throw new FredError("ERR_CONFIG", "ack batch size must be ≥ 1");
    if (!(this.#maxWaitMs >= 0)) throw new FredError("ERR_CONFIG", "ack batch wait must be ≥ 0");
    this.#lanes = new Array(lanes).fill(false);
  }

  /** Requests waiting for a lane. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Whether a request for the lease is alive (queued, in flight or waiting to be resubmitted). */
  has(leaseUuid: string): boolean {
    return this.#requests.has(leaseUuid);
  }

  /** Fire and forget: the outcome is logged; a lease left failed waits for recovery. */
  acknowledge(leaseUuid: string): void {
    this.#fire({ kind: "acknowledge", leaseUuid });
  }

  reject(leaseUuid: string, reason: string): void {
    this.#fire({ kind: "reject", leaseUuid, reason });
  }

  /** Resolves with the lease's final outcome (after any resubmissions); never rejects once queued. */
  submit(req: AckRequest): Promise<LeaseOutcome> {
    if (this.#closed) return Promise.reject(new FredError("ERR_SHUTTING_DOWN", "ack batcher is closed"));
    const existing = this.#requests.get(req.leaseUuid);
    if (existing !== undefined) return existing;
    if (this.#queue.length >= this.#maxQueued)
      return Promise.reject(new FredError("ERR_BUSY", "ack queue is full", { retryable: true }));
    // The common case settles on the first try; only a retryable failure takes the slow path.
    const life = this.#enqueue(req).then((first) => {
      if (!this.#resubmittable(first)) {
        this.#requests.delete(req.leaseUuid);
        return first;
      }
      return this.#resubmit(req, first).finally(() => this.#requests.delete(req.leaseUuid));
    });
    this.#requests.set(req.leaseUuid, life);
    return life;
  }

  #fire(req: AckRequest): void {
    if (this.#closed) return;
    this.submit(req).then(
      (outcome) => this.#report(req, outcome),
      (err: unknown) => this.#logger?.warn({ err, lease_uuid: req.leaseUuid }, "ack not queued"),
    );
  }

  #report(req: AckRequest, outcome: LeaseOutcome): void {
    const log = this.#logger;
    const fields = { lease_uuid: req.leaseUuid, kind: req.kind };
    if (outcome.status === "rejected")
      log?.info({ ...fields, tx_hash: outcome.txHash }, "lease rejected on chain");
    else if (outcome.status !== "failed")
      log?.info({ ...fields, status: outcome.status, tx_hash: outcome.txHash }, "lease settled on chain");
    else log?.warn({ ...fields, err: outcome.error, status: outcome.status }, "lease tx failed");
  }

  #resubmittable(o: LeaseOutcome): boolean {
    return o.status === "failed" && o.error?.retryable === true && !this.#closed;
  }

  /**
   * The slow path: `first` failed retryably. Try 1 is the one already made; each further
   * try queues the lease again after its delay, until it settles, the tries run out or
   * the batcher closes (the last outcome stands).
   */
  async #resubmit(req: AckRequest, first: LeaseOutcome): Promise<LeaseOutcome> {
    let last = first;
    try {
      return await retry(
        async (attempt) => {
          if (attempt > 1) last = await this.#enqueue(req);
          if (this.#resubmittable(last)) throw last.error;
          return last;
        },
        {
          clock: this.#clock,
          attempts: this.#resubmitDelays.length + 1,
          backoff: this.#resubmitDelays,
          signal: this.#abort.signal,
          onRetry: (err, tries, delayMs) =>
            this.#logger?.warn(
              { err, lease_uuid: req.leaseUuid, kind: req.kind, tries, delay_ms: delayMs },
              "lease tx failed; resubmitting",
            ),
        },
      );
    } catch {
      return last;
    }
  }

  #enqueue(req: AckRequest): Promise<LeaseOutcome> {
    return new Promise((resolve) => {
      this.#queue.push({ req, resolve, enqueuedAt: this.#clock.now() });
      this.#pump();
    });
  }

  /** Cuts batches while a lane is free and a batch is due; otherwise arms the time flush. */
  #pump(): void {
    for (;;) {
      if (this.#queue.length === 0) break;
      const lane = this.#freeLane();
      if (lane < 0) break;
      const oldest = this.#queue[0] as Pending;
      const overdue = this.#clock.now() - oldest.enqueuedAt >= this.#maxWaitMs;
      const full = this.#queue.length >= this.#maxBatch;
      if (!full && !overdue && !this.#closed) break;
      if (full) this.stats.sizeFlushes++;
      else this.stats.timeFlushes++;
      this.#start(lane, this.#queue.splice(0, this.#maxBatch));
    }
    this.stats.queued = this.#queue.length;
    this.#armTimer();
  }

  /**
   * The next free lane after the last one used: batches rotate over the signers even when
   * one lane would keep up, so every sub-signer's sequence and fee balance stay exercised.
   */
  #freeLane(): number {
    const n = this.#lanes.length;
    for (let k = 0; k < n; k++) {
      const lane = (this.#cursor + k) % n;
      if (!this.#lanes[lane]) return lane;
    }
    return -1;
  }

  #armTimer(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (this.#queue.length === 0 || !this.#lanes.includes(false)) return;
    const oldest = this.#queue[0] as Pending;
    const due = Math.max(0, oldest.enqueuedAt + this.#maxWaitMs - this.#clock.now());
    this.#cancelTimer = this.#clock.setTimer(due, () => {
      this.#cancelTimer = undefined;
      this.#pump();
    });
  }

  #start(lane: number, batch: Pending[]): void {
    this.#lanes[lane] = true;
    this.#cursor = (lane + 1) % this.#lanes.length;
    this.stats.flushes++;
    this.stats.inFlight++;
    const run = (async () => {
      let outcomes: LeaseOutcome[];
      try {
        outcomes = await this.#send(
          lane,
          batch.map((p) => p.req),
        );
      } catch (err) {
        const error = asFredError(err);
        outcomes = batch.map((p) => failed(p.req.leaseUuid, error));
      }
      const byLease = new Map(outcomes.map((o) => [o.leaseUuid, o]));
      for (const p of batch)
        p.resolve(
          byLease.get(p.req.leaseUuid) ??
            failed(p.req.leaseUuid, new FredError("ERR_CHAIN_TX", "no outcome reported for this lease")),
        );
    })();
    this.#inFlight.add(run);
    void run.finally(() => {
      this.#inFlight.delete(run);
      this.#lanes[lane] = false;
      this.stats.inFlight--;
      this.#pump();
    });
  }

  /** One lane's tx work for a batch: acknowledgements together, rejections by reason. */
  async #send(lane: number, batch: readonly AckRequest[]): Promise<LeaseOutcome[]> {
    const acks: string[] = [];
    const rejects = new Map<string, string[]>();
    for (const r of batch) {
      if (r.kind === "acknowledge") acks.push(r.leaseUuid);
      else rejects.set(r.reason, [...(rejects.get(r.reason) ?? []), r.leaseUuid]);
    }
    const out: LeaseOutcome[] = [];
    if (acks.length > 0) out.push(...(await this.#chain.acknowledge(acks, undefined, lane)));
    for (const [reason, uuids] of rejects)
      out.push(...(await this.#chain.reject(uuids, reason, undefined, lane)));
    return out;
  }

  /**
   * Stops intake, flushes what is queued at once and waits for txs in flight; a lease
   * waiting to be resubmitted keeps its last failed outcome (recovery picks it up).
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort();
    this.#pump();
    while (this.#inFlight.size > 0 || this.#queue.length > 0) {
      // A wait for whichever tx ends first (then the pump may start the next), not a
      // deadline: close has none of its own; providerd's shutdown bounds its release phase.
      await Promise.race(this.#inFlight);
      this.#pump();
    }
    this.#cancelTimer?.();
    await Promise.all(this.#requests.values());
  }
}

function failed(leaseUuid: string, error: FredError): LeaseOutcome {
  return { leaseUuid, status: "failed", error };
}

function asFredError(err: unknown): FredError {
  return err instanceof FredError
    ? err
    : new FredError("ERR_CHAIN_TX", (err as Error)?.message ?? String(err), { cause: err });
}
