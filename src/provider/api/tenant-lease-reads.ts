import { type BulkheadPolicy, bulkhead, isBulkheadRejectedError } from "cockatiel";
import type { TokenClaims } from "../../auth/token.ts";
import type { ChainLease, ChainPort, LeaseStateName } from "../../chain/port.ts";
import { Coalescer, withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { refuse } from "./errors.ts";

/** What the chain's event feed says about blocks and leases (EventFeed is one). */
export interface BlockSignal {
  /** Whether new blocks are being reported now. */
  live(): boolean;
  /** Calls `listener` on every new block; returns the unsubscribe. */
  onBlock(listener: () => void): () => void;
  /** Calls `listener` with the lease of every lease event reported (closed, auto-closed, …). */
  onLeaseEvent(listener: (leaseUuid: string) => void): () => void;
  /** Calls `listener` whenever `live()` may have changed. */
  onStateChange(listener: () => void): () => void;
}

/**
 * The chain read behind every authenticated request. Concurrent requests for one lease
 * share one read, and its answer serves later requests for as long as nothing can have
 * changed it. A lease's state changes only when a block commits, and while the event feed
 * is live:
 * - a PENDING lease (one the provider may acknowledge or reject, the tenant cancel, the
 *   chain expire, none of which the feed watches for every lease) or an unknown one is
 *   read again after each new block the feed reports (and after `blockTtlMs` at most, in
 *   case the feed stalls before its heartbeat notices);
 * - any other answer (ACTIVE, or a terminal state) is kept until the feed reports an
 *   event for that lease (a close, an auto-close), and `watchedTtlMs` at most: an ACTIVE
 *   lease can also be closed without an event the feed watches (a MsgWithdraw naming it,
 *   from the authority or sent with the provider's key outside providerd, auto-closes it
 *   with only `provider_withdraw`), and that bound is how long such a close goes unseen.
 * Every answer is dropped when the feed goes live or stops being live (a reconnect may
 * have missed events). Without a live feed an answer is kept `ttlMs`, less than a block.
 * A read that began before a block or an event for its lease answers the requests waiting
 * for it but is not reused after it. Reads run through a
 * bounded bulkhead: a flood of signed requests for random UUIDs queues here, then is
 * refused with 503, instead of multiplying onto the chain node. A failed read is never
 * cached and never becomes an allow: it answers 500 (503 when the bulkhead is full).
 */
export interface TenantLeaseReadsOptions {
  chain: ChainPort;
  clock: Clock;
  providerUuid: string;
  logger: Logger;
  /** How long one answer is reused without a live feed (default 1 s, under one block). */
  ttlMs?: number;
  /** New blocks and lease events; without it answers are kept `ttlMs`. */
  blocks?: BlockSignal;
  /** How long a PENDING or unknown lease's answer is reused at most while the feed is live (default 10 s). */
  blockTtlMs?: number;
  /** How long any other answer is reused at most while the feed is live (default 30 s). */
  watchedTtlMs?: number;
  /** Chain reads in flight at once (default 16). */
  concurrency?: number;
  /** Reads waiting for a slot before new ones are refused (default 256). */
  queue?: number;
  /** Deadline of one chain read (default 10 s). */
  timeoutMs?: number;
}

export class TenantLeaseReads {
  readonly #options: TenantLeaseReadsOptions;
  readonly #coalescer: Coalescer<ChainLease | undefined>;
  readonly #bulkhead: BulkheadPolicy;
  readonly #timeoutMs: number;
  readonly #ttlMs: number;
  readonly #unsubscribe: () => void;
  /** Leases whose remembered answer (PENDING or unknown) goes at the next block. */
  readonly #untilBlock = new Set<string>();

  constructor(opts: TenantLeaseReadsOptions) {
    this.#options = opts;
    this.#ttlMs = opts.ttlMs ?? 1_000;
    this.#coalescer = new Coalescer({ clock: opts.clock, ttlMs: this.#ttlMs });
    this.#bulkhead = bulkhead(opts.concurrency ?? 16, opts.queue ?? 256);
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    const blocks = opts.blocks;
    if (blocks === undefined) this.#unsubscribe = () => {};
    else {
      const stops = [
        blocks.onBlock(() => this.#newBlock()),
        blocks.onLeaseEvent((uuid) => this.#coalescer.invalidate(uuid)),
        blocks.onStateChange(() => this.#forgetAll()),
      ];
      this.#unsubscribe = () => {
        for (const stop of stops) stop();
      };
    }
  }

  readonly #timedOut = () =>
    new FredError("ERR_CHAIN_READ_TIMEOUT", `tenant lease read: no answer within ${this.#timeoutMs} ms`);

  #newBlock(): void {
    // A read begun before the block may hold a state the block changed: it answers its
    // callers but is not remembered (one for an ACTIVE lease is read again, as it was before).
    this.#coalescer.detachRunning();
    for (const uuid of this.#untilBlock) this.#coalescer.invalidate(uuid);
    this.#untilBlock.clear();
  }

  #forgetAll(): void {
    this.#coalescer.clear();
    this.#untilBlock.clear();
  }

  /** How long an answer read while the feed is live is remembered (one function: no allocation per request). */
  readonly #liveTtl = (lease: ChainLease | undefined, leaseUuid: string): number => {
    if (lease !== undefined && lease.state !== "LEASE_STATE_PENDING")
      return this.#options.watchedTtlMs ?? 30_000;
    this.#untilBlock.add(leaseUuid);
    return this.#options.blockTtlMs ?? 10_000;
  };

  /** Stops listening to the feed. */
  close(): void {
    this.#unsubscribe();
  }

  /** Chain reads running now (a gauge for tests and metrics). */
  get inflight(): number {
    return this.#coalescer.inflight;
  }

  /** The lease as the chain reports it; undefined when the chain has no record. */
  async read(leaseUuid: string): Promise<ChainLease | undefined> {
    try {
      // ttl 0 (tests) means "never reuse" whatever the feed says.
      const live = this.#ttlMs > 0 && this.#options.blocks?.live() === true;
      return await this.#coalescer.get(
        leaseUuid,
        () =>
          this.#bulkhead.execute(() =>
            // The read's own deadline, not a request's: a coalesced read serves many.
            withDeadline(this.#options.clock, this.#timeoutMs, undefined, this.#timedOut, (signal) =>
              this.#options.chain.getLease(leaseUuid, signal),
            ),
          ),
        live ? this.#liveTtl : this.#ttlMs,
      );
    } catch (err) {
      if (isBulkheadRejectedError(err)) throw refuse.unavailable("ERR_API_CHAIN_BUSY", err);
      throw refuse.chainRead(err);
    }
  }

  /**
   * The lease, owned by the token's tenant and placed with this provider: 404 when the
   * chain has none (or it is not in `state`), 403 when it belongs to someone else.
   */
  async owned(claims: TokenClaims, state?: LeaseStateName): Promise<ChainLease> {
    return this.#owned(claims, await this.read(claims.leaseUuid), state);
  }

  /** As `owned`, but undefined (not 404) when the chain has no record of the lease. */
  async ownedIfKnown(claims: TokenClaims): Promise<ChainLease | undefined> {
    const lease = await this.read(claims.leaseUuid);
    return lease === undefined ? undefined : this.#owned(claims, lease);
  }

  #owned(claims: TokenClaims, lease: ChainLease | undefined, state?: LeaseStateName): ChainLease {
    // As in the reference, a lease outside the required state is "not found" before ownership is checked.
    if (lease === undefined || (state !== undefined && lease.state !== state)) {
      throw refuse.leaseNotFound(
        state === "LEASE_STATE_ACTIVE" ? "lease not found or not active" : undefined,
      );
    }
    if (lease.tenant !== claims.tenant || lease.providerUuid !== this.#options.providerUuid) {
      this.#options.logger.warn(
        { lease_uuid: claims.leaseUuid, tenant: claims.tenant },
        "lease belongs to another tenant or provider",
      );
      throw refuse.forbidden();
    }
    return lease;
  }
}
