/**
 * Coalesces acknowledgements and rejections across leases into batched txs. Requests wait
 * in one queue; a batch is cut when it reaches `maxBatch` (size flush) or when the oldest
 * request has waited `maxWaitMs` (time flush), and is handed to a free lane. Each lane has
 * at most one tx in flight, so lanes map onto signers (the provider key, or authz
 * sub-signers) without racing a sequence. A lease submitted again while still queued or in
 * flight shares the first request's outcome. Time comes from the injected Clock.
 */
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { LeaseOutcome } from "../port.ts";

export type AckRequest =
  | { kind: "acknowledge"; leaseUuid: string }
  | { kind: "reject"; leaseUuid: string; reason: string };

export type FlushFn = (lane: number, batch: readonly AckRequest[]) => Promise<LeaseOutcome[]>;

export interface AckBatcherOptions {
  clock: Clock;
  flush: FlushFn;
  lanes?: number;
  maxBatch?: number;
  maxWaitMs?: number;
  /** Requests allowed to wait at once; beyond it submit() refuses (back-pressure). */
  maxQueued?: number;
}

interface Pending {
  req: AckRequest;
  promise: Promise<LeaseOutcome>;
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
  readonly #clock: Clock;
  readonly #flush: FlushFn;
  readonly #lanes: boolean[];
  readonly #maxBatch: number;
  readonly #maxWaitMs: number;
  readonly #maxQueued: number;
  #queue: Pending[] = [];
  readonly #byLease = new Map<string, Pending>();
  #cancelTimer: (() => void) | undefined;
  #closed = false;
  readonly #inFlight = new Set<Promise<void>>();
  readonly stats: AckBatcherStats = { queued: 0, inFlight: 0, flushes: 0, sizeFlushes: 0, timeFlushes: 0 };

  constructor(opts: AckBatcherOptions) {
    this.#clock = opts.clock;
    this.#flush = opts.flush;
    const lanes = opts.lanes ?? 1;
    this.#maxBatch = opts.maxBatch ?? 50;
    this.#maxWaitMs = opts.maxWaitMs ?? 500;
    this.#maxQueued = opts.maxQueued ?? 100_000;
    if (!Number.isInteger(lanes) || lanes < 1)
      throw new FredError("ERR_CONFIG", "ack batcher needs ≥ 1 lane");
    if (!Number.isInteger(this.#maxBatch) || this.#maxBatch < 1)
      throw new FredError("ERR_CONFIG", "ack batch size must be ≥ 1");
    if (!(this.#maxWaitMs >= 0)) throw new FredError("ERR_CONFIG", "ack batch wait must be ≥ 0");
    this.#lanes = new Array(lanes).fill(false);
  }

  submit(req: AckRequest): Promise<LeaseOutcome> {
    if (this.#closed) return Promise.reject(new FredError("ERR_SHUTTING_DOWN", "ack batcher is closed"));
    const existing = this.#byLease.get(req.leaseUuid);
    if (existing !== undefined) return existing.promise;
    if (this.#queue.length >= this.#maxQueued)
      return Promise.reject(new FredError("ERR_BUSY", "ack queue is full", { retryable: true }));
    let resolve: (o: LeaseOutcome) => void = () => {};
    const promise = new Promise<LeaseOutcome>((r) => {
      resolve = r;
    });
    const p: Pending = { req, promise, resolve, enqueuedAt: this.#clock.now() };
    this.#queue.push(p);
    this.#byLease.set(req.leaseUuid, p);
    this.stats.queued = this.#queue.length;
    this.#pump();
    return promise;
  }

  #freeLane(): number {
    return this.#lanes.indexOf(false);
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

  #armTimer(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (this.#queue.length === 0 || this.#freeLane() < 0) return;
    const oldest = this.#queue[0] as Pending;
    const due = Math.max(0, oldest.enqueuedAt + this.#maxWaitMs - this.#clock.now());
    this.#cancelTimer = this.#clock.setTimer(due, () => {
      this.#cancelTimer = undefined;
      this.#pump();
    });
  }

  #start(lane: number, batch: Pending[]): void {
    this.#lanes[lane] = true;
    this.stats.flushes++;
    this.stats.inFlight++;
    const run = (async () => {
      let outcomes: LeaseOutcome[];
      try {
        outcomes = await this.#flush(
          lane,
          batch.map((p) => p.req),
        );
      } catch (err) {
        const error =
          err instanceof FredError
            ? err
            : new FredError("ERR_CHAIN_TX", (err as Error)?.message ?? String(err), { cause: err });
        outcomes = batch.map((p) => ({ leaseUuid: p.req.leaseUuid, status: "failed", error }));
      }
      const byLease = new Map(outcomes.map((o) => [o.leaseUuid, o]));
      for (const p of batch) {
        this.#byLease.delete(p.req.leaseUuid);
        p.resolve(
          byLease.get(p.req.leaseUuid) ?? {
            leaseUuid: p.req.leaseUuid,
            status: "failed",
            error: new FredError("ERR_CHAIN_TX", "no outcome reported for this lease"),
          },
        );
      }
    })();
    this.#inFlight.add(run);
    void run.finally(() => {
      this.#inFlight.delete(run);
      this.#lanes[lane] = false;
      this.stats.inFlight--;
      this.#pump();
    });
  }

  /** Stops intake, flushes what is queued immediately, and waits for in-flight txs. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#pump();
    while (this.#inFlight.size > 0 || this.#queue.length > 0) {
      await Promise.race(this.#inFlight);
      this.#pump();
    }
    this.#cancelTimer?.();
  }
}
