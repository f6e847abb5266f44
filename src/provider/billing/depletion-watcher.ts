import type { FeedConsumer } from "../../chain/events/fanout.ts";
import type { Logger } from "../../log.ts";

/**
 * The cross-provider depletion watcher: its own consumer on the chain feed's fan-out (so
 * the lifecycle's queue never holds it up, nor it the lifecycle). When the chain
 * auto-closes another provider's lease for exhausted credit (`lease_auto_closed`, which
 * the feed subscribes to for every provider) and that tenant holds leases here, the
 * tenant's credit check runs at once instead of at the next tick: its credit is likely
 * gone here too. A resync (events may have been lost) asks for the full check instead.
 */
export interface DepletionWatcherDeps {
  consumer: FeedConsumer;
  providerUuid: string;
  /** Whether the tenant held ACTIVE leases here at the last credit check. */
  holds(tenant: string): boolean;
  checkTenant(tenant: string): void;
  checkAll(): void;
  logger: Logger;
}

export class DepletionWatcher {
  readonly #deps: DepletionWatcherDeps;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(deps: DepletionWatcherDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    this.#deps.consumer.close();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const d = this.#deps;
    for (;;) {
      const item = await d.consumer.next(this.#abort.signal).catch(() => undefined);
      if (item === undefined) return;
      if (item.type === "resync") {
        d.checkAll();
        continue;
      }
      const e = item.event;
      if (e.kind !== "lease_auto_closed" || e.providerUuid === d.providerUuid || !d.holds(e.tenant)) continue;
      d.logger.info(
        { tenant: e.tenant, lease_uuid: e.leaseUuid, provider_uuid: e.providerUuid },
        "another provider's lease of a tenant with leases here ran out of credit; checking the tenant now",
      );
      d.checkTenant(e.tenant);
    }
  }
}
