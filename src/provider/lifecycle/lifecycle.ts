import type { FeedConsumer, FeedItem, LeaseEvent } from "../../chain/index.ts";
import type { ChainLease } from "../../chain/port.ts";
import { GroupCommitter } from "../store/index.ts";
import { Closer } from "./closer.ts";
import type { LifecycleDeps } from "./deps.ts";
import { Dispatcher } from "./dispatcher.ts";
import { Provisioner } from "./provisioner.ts";
import {
  type Applied,
  type ApplyResult,
  applyCallback,
  sendChainAction,
  type VerifiedCallback,
} from "./settle.ts";
import { checkOverdueAttempts } from "./timeouts.ts";

/**
 * The lease lifecycle: chain events in, provisions and deprovisions out, callbacks
 * settled. Every mutation of one lease runs in that lease's serial queue; the typed
 * dispatcher gives each step its own retries. A feed `resync` (and the periodic pass)
 * hands over to recovery, which re-reads the chain and the backends.
 */
type Messages = {
  lease_created: { leaseUuid: string; lease?: ChainLease };
  lease_ended: { leaseUuid: string };
};

export interface LifecycleOptions {
  /** Recovery pass (startup, feed resync, periodic). */
  recover: (signal: AbortSignal) => Promise<void>;
  /** How often leases waiting for their payload look again (default 1 s). */
  payloadPollMs?: number;
  /** How often overdue attempts are checked (default: a quarter of the timeout, 1 s..60 s). */
  timeoutCheckMs?: number;
  /** Periodic recovery (default: reconciliation_interval). */
  recoveryIntervalMs?: number;
}

export class Lifecycle {
  readonly deps: LifecycleDeps;
  readonly provisioner: Provisioner;
  readonly closer: Closer;
  readonly #dispatcher: Dispatcher<Messages>;
  readonly #abort = new AbortController();
  readonly #opts: Required<LifecycleOptions>;
  readonly #awaitingPayload = new Set<string>();
  /** The pending timer of each periodic task, by task index. */
  readonly #timers = new Map<number, () => void>();
  #stopping = false;
  readonly #running = new Set<Promise<unknown>>();
  #consumerLoop: Promise<void> | undefined;
  /** Callbacks arriving together are applied in one transaction (one fsync). */
  readonly #callbacks: GroupCommitter<VerifiedCallback, Applied>;

  constructor(deps: LifecycleDeps, opts: LifecycleOptions) {
    this.deps = deps;
    this.provisioner = new Provisioner(deps);
    this.closer = new Closer(deps);
    const timeout = deps.config.provisionCallbackTimeoutMs;
    this.#opts = {
      payloadPollMs: 1_000,
      timeoutCheckMs: Math.min(60_000, Math.max(1_000, Math.floor(timeout / 4))),
      recoveryIntervalMs: deps.config.reconciliationIntervalMs,
      ...opts,
    };
    this.#callbacks = new GroupCommitter(
      (batch) => deps.store.batch(() => batch.map((cb) => applyCallback(deps, cb))),
      { durable: () => deps.store.durable() },
    );
    this.#dispatcher = new Dispatcher<Messages>({
      clock: deps.clock,
      logger: deps.logger,
      signal: this.#abort.signal,
    });
    this.#dispatcher.on("lease_created", "provision", async ({ leaseUuid, lease }, signal) => {
      const step = await deps.queue.run(leaseUuid, () =>
        this.provisioner.provision(leaseUuid, signal, lease),
      );
      if (step === "awaiting-payload") this.#awaitingPayload.add(leaseUuid);
    });
    this.#dispatcher.on("lease_ended", "deprovision", async ({ leaseUuid }, signal) => {
      this.#awaitingPayload.delete(leaseUuid);
      await deps.queue.run(leaseUuid, () => this.closer.close(leaseUuid, signal));
    });
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get awaitingPayload(): number {
    return this.#awaitingPayload.size;
  }

  get dispatchStats() {
    return this.#dispatcher.stats;
  }

  /** Starts consuming the feed and the periodic checks. */
  start(consumer: FeedConsumer): void {
    this.#consumerLoop = this.#consume(consumer);
    this.#every(this.#opts.payloadPollMs, () => this.#pollPayloads());
    this.#every(this.#opts.timeoutCheckMs, () =>
      checkOverdueAttempts(this.deps, this.provisioner, this.signal),
    );
    this.#every(this.#opts.recoveryIntervalMs, () => this.#opts.recover(this.signal));
  }

  async #consume(consumer: FeedConsumer): Promise<void> {
    for (;;) {
      let item: FeedItem | undefined;
      try {
        item = await consumer.next(this.signal);
      } catch {
        return;
      }
      if (item === undefined) return;
      if (item.type === "resync") {
        this.deps.logger.info({ reason: item.reason }, "event feed resync; running recovery");
        this.#track(this.#opts.recover(this.signal));
      } else {
        this.onEvent(item.event);
      }
    }
  }

  onEvent(event: LeaseEvent): void {
    if (event.providerUuid !== this.deps.config.providerUuid) return;
    if (event.kind === "lease_created") this.startProvision(event.leaseUuid);
    else if (
      event.kind === "lease_closed" ||
      event.kind === "lease_expired" ||
      event.kind === "lease_auto_closed" ||
      event.kind === "lease_cancelled"
    ) {
      this.#track(this.#dispatcher.dispatch("lease_ended", { leaseUuid: event.leaseUuid }));
    }
  }

  /** Starts (or re-checks) the provision workflow for a lease; `lease` skips the chain re-read. */
  startProvision(leaseUuid: string, lease?: ChainLease): void {
    this.#track(
      this.#dispatcher.dispatch("lease_created", { leaseUuid, ...(lease === undefined ? {} : { lease }) }),
    );
  }

  /** A payload for `leaseUuid` was stored (tenant upload, or seen by the poll). */
  notifyPayload(leaseUuid: string): void {
    if (this.#awaitingPayload.delete(leaseUuid)) this.startProvision(leaseUuid);
  }

  /** Applies a verified callback; resolves once the change is durable and its chain tx queued. */
  applyCallback(cb: VerifiedCallback): Promise<ApplyResult> {
    return this.deps.queue.run(cb.leaseUuid, async () => {
      const applied = await this.#callbacks.submit(cb);
      sendChainAction(this.deps, cb.leaseUuid, applied);
      return applied.result;
    });
  }

  #pollPayloads(): Promise<void> {
    const payloads = this.deps.payloads;
    if (payloads !== undefined) {
      for (const lease of [...this.#awaitingPayload]) if (payloads.has(lease)) this.notifyPayload(lease);
    }
    return Promise.resolve();
  }

  /** Chained timers: the next run is scheduled only after the previous one finished. */
  #every(ms: number, task: () => Promise<unknown>): void {
    if (!(ms > 0)) return;
    const id = this.#timers.size;
    const schedule = () => {
      if (this.#stopping) return;
      const cancel = this.deps.clock.setTimer(ms, () => {
        const run = task().catch((err) => this.deps.logger.warn({ err }, "periodic task failed"));
        this.#track(run.finally(schedule));
      });
      this.#timers.set(id, cancel);
    };
    schedule();
  }

  #track(p: Promise<unknown>): void {
    const guarded = p.catch((err) => this.deps.logger.warn({ err }, "lifecycle task failed"));
    this.#running.add(guarded);
    void guarded.finally(() => this.#running.delete(guarded));
  }

  /** Work queued or running (lease queue plus dispatched handlers). */
  get busy(): number {
    return this.deps.queue.depth + this.#running.size;
  }

  /** Stops intake and waits for queued work, up to `deadlineMs`; then aborts what is left. */
  async stop(deadlineMs: number): Promise<void> {
    this.#stopping = true;
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
    const drained = Promise.allSettled([...this.#running]).then(() => this.deps.queue.idle());
    let timer: (() => void) | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = this.deps.clock.setTimer(deadlineMs, resolve);
    });
    await Promise.race([drained, expired]);
    timer?.();
    this.#abort.abort();
    await this.#consumerLoop;
  }
}
