import type { ChainPort, LeaseOutcome } from "../../chain/port.ts";
import { AckBatcher, type AckRequest } from "../../chain/tx/ack-batcher.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";

/**
 * Acknowledgements and rejections on their way to the chain, batched by the chain
 * client's AckBatcher. One batch may mix acknowledgements and rejections with different
 * reasons; the flush sends one message kind/reason group at a time. A retryable failure
 * is resubmitted a few times; anything left over is picked up by the next recovery pass
 * (a PENDING lease whose backend reports it ready is acknowledged again).
 */
export interface AckQueueOptions {
  chain: ChainPort;
  clock: Clock;
  logger: Logger;
  maxBatch?: number;
  maxWaitMs?: number;
  resubmits?: number;
  resubmitDelayMs?: number;
}

export class AckQueue {
  readonly #batcher: AckBatcher;
  readonly #o: Required<Omit<AckQueueOptions, "chain" | "clock" | "logger">>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly outcomes = { acknowledged: 0, rejected: 0, failed: 0 };
  #closed = false;

  constructor(opts: AckQueueOptions) {
    this.#clock = opts.clock;
    this.#logger = opts.logger;
    this.#o = {
      // One batch fills one transaction of the chain adapter (10 messages × 100 leases):
      // with one signer lane, a burst of callbacks is acknowledged in a handful of txs.
      maxBatch: opts.maxBatch ?? 1_000,
      maxWaitMs: opts.maxWaitMs ?? 500,
      resubmits: opts.resubmits ?? 3,
      resubmitDelayMs: opts.resubmitDelayMs ?? 2_000,
    };
    const chain = opts.chain;
    this.#batcher = new AckBatcher({
      clock: opts.clock,
      maxBatch: this.#o.maxBatch,
      maxWaitMs: this.#o.maxWaitMs,
      flush: async (_lane, batch) => flushGroups(chain, batch),
    });
  }

  get queued(): number {
    return this.#batcher.stats.queued;
  }

  acknowledge(leaseUuid: string): void {
    this.#submit({ kind: "acknowledge", leaseUuid }, 0);
  }

  reject(leaseUuid: string, reason: string): void {
    this.#submit({ kind: "reject", leaseUuid, reason }, 0);
  }

  #submit(req: AckRequest, tries: number): void {
    if (this.#closed) return;
    this.#batcher.submit(req).then(
      (outcome) => this.#settled(req, outcome, tries),
      (err) => this.#logger.warn({ err, lease_uuid: req.leaseUuid }, "ack not queued"),
    );
  }

  #settled(req: AckRequest, outcome: LeaseOutcome, tries: number): void {
    const log = this.#logger.child({ lease_uuid: req.leaseUuid, kind: req.kind });
    if (outcome.status === "acknowledged" || outcome.status === "already_done") {
      if (req.kind === "acknowledge") this.outcomes.acknowledged++;
      else this.outcomes.rejected++;
      log.info({ status: outcome.status, tx_hash: outcome.txHash }, "lease settled on chain");
      return;
    }
    if (outcome.status === "rejected") {
      this.outcomes.rejected++;
      log.info({ tx_hash: outcome.txHash }, "lease rejected on chain");
      return;
    }
    this.outcomes.failed++;
    const retryable = outcome.error?.retryable ?? false;
    log.warn({ err: outcome.error, status: outcome.status, tries }, "lease tx failed");
    if (retryable && tries < this.#o.resubmits && !this.#closed) {
      this.#clock.setTimer(this.#o.resubmitDelayMs * (tries + 1), () => this.#submit(req, tries + 1));
    }
  }

  /** Flushes what is queued and waits for transactions in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#batcher.close();
  }
}

async function flushGroups(chain: ChainPort, batch: readonly AckRequest[]): Promise<LeaseOutcome[]> {
  const acks: string[] = [];
  const rejects = new Map<string, string[]>();
  for (const r of batch) {
    if (r.kind === "acknowledge") acks.push(r.leaseUuid);
    else rejects.set(r.reason, [...(rejects.get(r.reason) ?? []), r.leaseUuid]);
  }
  const out: LeaseOutcome[] = [];
  if (acks.length > 0) out.push(...(await chain.acknowledge(acks)));
  for (const [reason, uuids] of rejects) out.push(...(await chain.reject(uuids, reason)));
  return out;
}
