import { EventEmitter } from "node:events";
import type { FeedConsumer } from "../../chain/events/fanout.ts";
import type { FeedItem, LeaseEvent } from "../../chain/events/types.ts";
import type { ChainLease } from "../../chain/port.ts";
import { Admission, isRetryable, retry, withDeadline } from "../../core/async/index.ts";
import { FredError, isFredError } from "../../core/errors.ts";
import { promote } from "../maintenance/index.ts";
import type { Attempt } from "../store/index.ts";
import { CloseRetries } from "./close-retries.ts";
import { Closer, SINGLE_CLOSE_TRY } from "./closer.ts";
import { pushCustomDomains } from "./custom-domains.ts";
import type { LifecycleDeps } from "./deps.ts";

import { Provisioner, type ProvisionOrder, type ProvisionStep } from "./provisioner.ts";
import {
  type ApplyResult,
  applyCallback,
  checkTeardown,
  maskRunningPayloads,
  sendChainAction,
  type TeardownEvidence,
  type VerifiedCallback,
  wouldRetire,
} from "./settle.ts";
import { checkOverdueAttempts } from "./timeouts.ts";

/**
 * The lease lifecycle: chain events in, provisions and deprovisions out, callbacks
 * settled. Every mutation of one lease runs in that lease's serial queue; each step
 * (provision, deprovision) retries a retryable failure a few times on its own, then is
 * left to the next recovery pass. A feed `resync` (and the periodic pass) hands over to
 * recovery, which re-reads the chain and the backends.
 *
 * The gates of the provision leg, in the order a new lease meets them:
 *
 * | gate                                   | where              | bounds                                      |
 * |----------------------------------------|--------------------|---------------------------------------------|
 * | admission (PROVISION_ADMISSION, 256)   | `#provisions`      | provision workflows alive at once, and so   |
 * |                                        |                    | new provisions on the wire                  |
 * | lease read (per block)                 | ProvisionLeaseReads        | chain queries: one listing per block        |
 * | lease serial queue                     | `deps.queue`       | one mutation of a lease at a time           |
 * | lease rules                            | core/lease-rules   | what is provisioned (PENDING, billing-only, |
 * |                                        |                    | acceptable payload)                         |
 * | attempt group commit                   | Provisioner        | one transaction + fsync per turn's          |
 * |                                        |                    | attempts, before any request leaves         |
 * | step retry (STEP_RETRY)                | `#step`            | tries of one step before recovery takes it  |
 * | callback group commit                  | applyCallback      | one transaction + fsync per turn's callbacks|
 * | ack batcher                            | deps.acks          | acknowledgements per chain transaction      |
 *
 * The reconciler's sweep enters the same leg at the lease queue (`runForLease` then
 * `provision` with a target), so both paths share every gate after admission.
 */

const noop = () => {};

/** Tries of one lease step: a lagging RPC node or a backend not reached yet (retryable). */
const STEP_RETRY = { attempts: 4, backoff: { initialMs: 500, maxMs: 10_000 } } as const;

/**
 * A provision nothing received (the connection was refused, e.g. the backend is restarting;
 * or its circuit is open): tried again with the same backoff until the backend answers,
 * rather than left to a sweep minutes away. Each try re-reads the lease, so one that ended
 * meanwhile stops the loop.
 */
const UNTIL_ANSWERED = "ERR_PROVISION_NOT_SENT";

/**
 * Provision workflows started at once, and so the bound on new provisions between their
 * attempt commit and the backend's answer (a workflow keeps its slot until its first try
 * ends). A block of 10,000 new leases otherwise puts 10,000 requests (bodies, handlers,
 * promises) into the backends' connection pools together; 64 connections per backend
 * cannot send more than a few hundred at a time anyway, so the rest only held memory (peak
 * RSS 425–460 MB). Leases beyond it wait as bare keys, their chain reads already started.
 */
export const PROVISION_ADMISSION = 256;

/** A lease waiting for a provision slot: the lease as already read, or its read in progress. */
type QueuedProvision = ChainLease | Promise<ChainLease | undefined> | undefined;

/** The recovery pass the lifecycle hands over to on a feed resync and periodically. */
export type RecoverFn = (signal: AbortSignal) => Promise<unknown>;

export interface LifecycleOptions {
  /** How often leases waiting for their payload look again (default 1 s). */
  payloadPollMs?: number;
  /** How often overdue attempts are checked (default: a quarter of the timeout, 1 s..60 s). */
  timeoutCheckMs?: number;
  /** Periodic recovery (default: reconciliation_interval). */
  recoveryIntervalMs?: number;
}

/**
 * Typed events, so tests and the composition root wait for a state instead of polling:
 * `idle` — no lease work is queued or running any more (emitted each time it drains);
 * `callback-applied` — a backend's callback was applied.
 */
export interface LifecycleEvents {
  idle: [];
  /** A verified callback is applied and durable, its chain action queued (the tenant API streams it). */
  "callback-applied": [cb: VerifiedCallback, result: ApplyResult];
}

export class Lifecycle extends EventEmitter<LifecycleEvents> {
  readonly #deps: LifecycleDeps;
  readonly #provisioner: Provisioner;
  readonly #closer: Closer;
  /** Closes a backend did not confirm, tried again before the next sweep. */
  readonly #closeRetries: CloseRetries;
  readonly #abort = new AbortController();
  readonly #opts: Required<LifecycleOptions>;
  readonly #awaitingPayload = new Set<string>();
  /** The pending timer of each periodic task, by task index. */
  readonly #timers = new Map<number, () => void>();
  /** Callbacks are applied from `start` until `stop` (before and after: ERR_NOT_READY, 503). */
  #started = false;
  #stopping = false;
  readonly #running = new Set<Promise<unknown>>();
  #consumerLoop: Promise<void> | undefined;
  /** Leases whose provision workflow has not started yet (a burst waits here, not as workflows). */
  readonly #provisions: Admission<QueuedProvision>;

  constructor(deps: LifecycleDeps, opts: LifecycleOptions = {}) {
    super();
    this.#deps = deps;
    this.#provisioner = new Provisioner(deps);
    this.#closer = new Closer(deps);
    // One try per backend from the retry queue: its own backoff spaces the tries.
    const retryCloser = new Closer(deps, SINGLE_CLOSE_TRY);
    this.#closeRetries = new CloseRetries({
      clock: deps.clock,
      logger: deps.logger,
      close: async (leaseUuid) => {
        const r = await deps.queue.run(leaseUuid, () => retryCloser.close(leaseUuid, this.signal));
        return r.failed.length === 0;
      },
      onDropped: () => deps.observe.closeRetryDropped(),
    });
    const timeout = deps.config.provisionCallbackTimeoutMs;
    this.#opts = {
      payloadPollMs: 1_000,
      timeoutCheckMs: Math.min(60_000, Math.max(1_000, Math.floor(timeout / 4))),
      recoveryIntervalMs: deps.config.reconciliationIntervalMs,
      ...opts,
    };
    this.#provisions = new Admission(PROVISION_ADMISSION, (leaseUuid, queued, release) =>
      this.#runProvision(leaseUuid, queued, release),
    );
  }

  /** One lease step under the lease's queue, retried while its failure is retryable. */
  async #step(
    step: string,
    leaseUuid: string,
    work: (signal: AbortSignal, attempt: number) => Promise<void>,
  ): Promise<void> {
    const { clock, logger, queue } = this.#deps;
    const signal = this.signal;
    let failures = 0;
    try {
      await retry((attempt) => queue.run(leaseUuid, () => work(signal, attempt)), {
        backoff: STEP_RETRY.backoff,
        clock,
        signal,
        retryable: (err) =>
          (err instanceof FredError && err.code === UNTIL_ANSWERED) ||
          (++failures < STEP_RETRY.attempts && isRetryable(err)),
        onRetry: (err, attempt, delay) =>
          logger.debug({ err, step, lease_uuid: leaseUuid, attempt, delay }, "lease step will retry"),
      });
    } catch (err) {
      if (signal.aborted) return;
      logger.warn({ err, step, lease_uuid: leaseUuid }, "lease step gave up; left to recovery");
    }
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get awaitingPayload(): number {
    return this.#awaitingPayload.size;
  }

  /** Starts consuming the feed and the periodic checks; resyncs and the periodic pass call `recover`. */
  start(consumer: FeedConsumer, recover: RecoverFn): void {
    this.#started = true;
    this.#consumerLoop = this.#consume(consumer, recover);
    this.#every(this.#opts.payloadPollMs, () => this.#pollPayloads());
    this.#every(this.#opts.timeoutCheckMs, () =>
      checkOverdueAttempts(this.#deps, this.#provisioner, this.signal),
    );
    this.#every(this.#opts.recoveryIntervalMs, () => recover(this.signal));
  }

  async #consume(consumer: FeedConsumer, recover: RecoverFn): Promise<void> {
    for (;;) {
      let item: FeedItem | undefined;
      try {
        item = await consumer.next(this.signal);
      } catch {
        return;
      }
      if (item === undefined) return;
      if (item.type === "resync") {
        this.#deps.logger.info({ reason: item.reason }, "event feed resync; running recovery");
        this.#track(recover(this.signal));
      } else {
        this.onEvent(item.event);
      }
    }
  }

  onEvent(event: LeaseEvent): void {
    if (event.providerUuid !== this.#deps.config.providerUuid) return;
    if (event.kind === "lease_created") this.startProvision(event.leaseUuid);
    else if (
      event.kind === "lease_closed" ||
      event.kind === "lease_expired" ||
      event.kind === "lease_auto_closed" ||
      event.kind === "lease_cancelled"
    ) {
      const leaseUuid = event.leaseUuid;
      this.#awaitingPayload.delete(leaseUuid);
      // Ended before its provision workflow started: it never needs one.
      this.#provisions.remove(leaseUuid);
      this.#track(this.#step("deprovision", leaseUuid, (signal) => this.#closeEnded(leaseUuid, signal)));
    } else if (event.kind === "lease_custom_domain_set" || event.kind === "lease_custom_domain_cleared") {
      const leaseUuid = event.leaseUuid;
      this.#track(
        this.#step("custom_domain", leaseUuid, async (signal) => {
          await pushCustomDomains(this.#deps, leaseUuid, signal);
        }),
      );
    }
  }

  /**
   * Starts (or re-checks) the provision workflow for a lease; `lease` skips the chain
   * re-read. Beyond PROVISION_ADMISSION workflows at once, the lease waits its turn; its
   * chain read starts now, so a block's worth of new leases is still read in one listing.
   */
  startProvision(leaseUuid: string, lease?: ChainLease): void {
    if (this.#stopping || this.#provisions.has(leaseUuid)) return;
    const queued: QueuedProvision =
      lease ??
      (this.#provisions.admitted < PROVISION_ADMISSION
        ? undefined
        : this.#provisioner.leases.get(leaseUuid).catch(() => undefined));
    this.#provisions.add(leaseUuid, queued);
  }

  /** One admitted provision workflow; its slot is given back when its first try ends. */
  #runProvision(leaseUuid: string, queued: QueuedProvision, release: () => void): void {
    this.#track(
      this.#step("provision", leaseUuid, async (signal, attempt) => {
        try {
          // A retry re-reads the lease: it may have ended since it was first read.
          const known = attempt === 1 ? await queued : undefined;
          const step = await this.#provisioner.provision(leaseUuid, signal, { lease: known });
          if (step === "awaiting-payload") this.#awaitingPayload.add(leaseUuid);
        } finally {
          release();
        }
      }).finally(release),
    );
  }

  /**
   * A provision the reconciler's sweep asks for (`order.target` set), or a new lease's; call
   * inside the lease's serial queue (`runForLease`). The same gates as the event path.
   */
  provision(leaseUuid: string, order: ProvisionOrder, signal: AbortSignal): Promise<ProvisionStep> {
    return this.#provisioner.provision(leaseUuid, signal, order);
  }

  /**
   * Re-sends an unresolved attempt with its own operation id; when the chain says the lease
   * ended, deprovisions it where it was attempted instead. Call inside the lease's queue.
   */
  async redeliver(attempt: Attempt, signal: AbortSignal): Promise<ProvisionStep | "lease-ended"> {
    const step = await this.#provisioner.redeliver(attempt, signal);
    if (step === "lease-ended") await this.#closeEnded(attempt.leaseUuid, signal);
    return step;
  }

  /** Deprovisions an ended lease; a backend that did not confirm gets it again from the retry queue. */
  async #closeEnded(leaseUuid: string, signal: AbortSignal): Promise<void> {
    const result = await this.#closer.close(leaseUuid, signal);
    if (result.failed.length > 0) this.#closeRetries.hint(leaseUuid);
  }

  /** Leases whose close waits in the retry queue. */
  get closeRetriesPending(): number {
    return this.#closeRetries.size;
  }

  /** Whether a provision request for the lease is on the wire right now. */
  provisioning(leaseUuid: string): boolean {
    return this.#provisioner.inFlight.has(leaseUuid);
  }

  /** Provision requests on the wire right now. */
  get provisionsInFlight(): number {
    return this.#provisioner.inFlight.size;
  }

  /** A payload for `leaseUuid` was stored (tenant upload, or seen by the poll). */
  notifyPayload(leaseUuid: string): void {
    if (this.#awaitingPayload.delete(leaseUuid)) this.startProvision(leaseUuid);
  }

  /**
   * A tenant upload was stored durably: provision now, whether or not this process saw
   * the lease waiting (its lease_created may still be queued; the workflow is idempotent).
   */
  payloadUploaded(leaseUuid: string): void {
    this.#awaitingPayload.delete(leaseUuid);
    if (!this.#stopping) this.startProvision(leaseUuid);
  }

  /**
   * Applies a verified callback; resolves once the change is durable and its chain tx queued.
   * A `deprovisioned` report that would retire the placement is first checked against the
   * chain and the owner's record (`checkTeardown` in `settle.ts`); one they contradict changes nothing.
   */
  async applyCallback(cb: VerifiedCallback): Promise<ApplyResult> {
    if (!this.#started || this.#stopping) {
      const state = this.#stopping ? "stopping" : "starting";
      throw new FredError("ERR_NOT_READY", `providerd is ${state}; callbacks are not applied now`);
    }
    const result = await this.runForLease(cb.leaseUuid, async () => {
      if (wouldRetire(this.#deps, cb)) {
        const unconfirmed = this.#unconfirmedTeardown(cb, await checkTeardown(this.#deps, cb, this.signal));
        if (unconfirmed !== undefined) return unconfirmed;
      }
      // Callbacks applied in the same turn share its one commit and fsync; each is atomic alone.
      const applied = this.#deps.store.batch(() => applyCallback(this.#deps, cb));
      await this.#deps.store.durable();
      sendChainAction(this.#deps, cb.leaseUuid, applied);
      if (applied.result === "acknowledging") await maskRunningPayloads(this.#deps, [cb.leaseUuid]);
      if (applied.promote !== undefined) {
        // The confirmation is durable: a failed payload write is retried by the recovery pass.
        await promote(this.#deps, applied.promote).catch((err: unknown) =>
          this.#deps.logger.warn({ err, lease_uuid: cb.leaseUuid }, "promoting the updated manifest failed"),
        );
      }
      return applied.result;
    });
    this.emit("callback-applied", cb, result);
    return result;
  }

  /** What a teardown report the evidence does not confirm comes to (undefined: it stands). */
  #unconfirmedTeardown(cb: VerifiedCallback, evidence: TeardownEvidence): ApplyResult | undefined {
    const log = this.#deps.logger.child({ lease_uuid: cb.leaseUuid, backend: cb.backend });
    if (evidence === "ended") return undefined;
    if (evidence === "running") {
      this.#deps.observe.callbackContradicted(cb.backend);
      log.warn("backend reported a teardown the chain and its own record contradict; lifecycle kept");
      return "contradicted";
    }
    if (evidence === "lost") {
      log.warn("backend reported a teardown of a live lease whose workload is gone; left to the reconciler");
      return "lost";
    }
    log.warn("backend reported a teardown the chain cannot confirm; placement kept");
    return "ignored-stale";
  }

  /** Runs `work` in the lease's serial queue, as lifecycle work (drained by stop, awaited by idle). */
  runForLease<T>(leaseUuid: string, work: () => Promise<T>): Promise<T> {
    const result = this.#deps.queue.run(leaseUuid, work);
    // The caller handles the failure; tracking only counts the work.
    this.#track(result.then(noop, noop));
    return result;
  }

  async #pollPayloads(): Promise<void> {
    const payloads = this.#deps.payloads;
    if (payloads === undefined) return;
    for (const lease of [...this.#awaitingPayload]) if (await payloads.has(lease)) this.notifyPayload(lease);
  }

  /** Chained timers: the next run is scheduled only after the previous one finished. */
  #every(ms: number, task: () => Promise<unknown>): void {
    if (!(ms > 0)) return;
    const id = this.#timers.size;
    const schedule = () => {
      if (this.#stopping) return;
      const cancel = this.#deps.clock.setTimer(ms, () => {
        const run = task().catch((err) => this.#deps.logger.warn({ err }, "periodic task failed"));
        this.#track(run.finally(schedule));
      });
      this.#timers.set(id, cancel);
    };
    schedule();
  }

  #track(p: Promise<unknown>): void {
    const guarded = p.catch((err) => this.#deps.logger.warn({ err }, "lifecycle task failed"));
    this.#running.add(guarded);
    void guarded.finally(() => {
      this.#running.delete(guarded);
      if (this.busy === 0) this.emit("idle");
    });
  }

  /** Resolves once no lease work is queued or running (at once, or at the next `idle`). */
  idle(): Promise<void> {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.once("idle", resolve));
  }

  /** Work queued or running (lease queue, lease steps, provisions waiting for a slot). */
  get busy(): number {
    return this.#deps.queue.depth + this.#running.size + this.#provisions.waiting;
  }

  /** Stops intake and waits for queued work, up to `deadlineMs`; then aborts what is left. */
  async stop(deadlineMs: number): Promise<void> {
    this.#stopping = true;
    this.#provisions.clear();
    this.#closeRetries.stop();
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
    const drained = Promise.allSettled([...this.#running]).then(() => this.#deps.queue.idle());
    const timedOut = () =>
      new FredError("ERR_SHUTDOWN_DRAIN_TIMEOUT", `lease work did not drain within ${deadlineMs} ms`);
    try {
      await withDeadline(this.#deps.clock, deadlineMs, undefined, timedOut, () => drained);
    } catch (err) {
      if (!isFredError(err, "ERR_SHUTDOWN_DRAIN_TIMEOUT")) throw err;
      // Not a failure of stop: what is left is aborted next and finished by recovery.
      this.#deps.logger.warn({ err, busy: this.busy }, "lease work did not drain in time; aborting the rest");
    }
    this.#abort.abort();
    await this.#consumerLoop;
  }
}
