import type { Registry } from "prom-client";
import type { FeedConsumer } from "../../chain/events/fanout.ts";
import type { ChainPort } from "../../chain/port.ts";
import { definedOnly } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { ProviderConfig } from "../config/index.ts";
import { CreditMonitor, type CreditNotices } from "./credit-monitor.ts";
import { DepletionWatcher } from "./depletion-watcher.ts";
import { createBillingMetrics } from "./metrics.ts";
import { BillingScheduler } from "./scheduler.ts";
import { withdrawCycle } from "./withdrawals.ts";

export { coinText, depletesAtMs, horizonOf } from "./credit-math.ts";
/**
 * Getting paid: the billing scheduler with its jobs, built from explicit dependencies.
 * The composition root creates it, starts it once the lifecycle runs and stops it first
 * on shutdown (a withdrawal in flight is interrupted; the chain settles it next cycle).
 */
export {
  CLOSE_REASON,
  CreditMonitor,
  type CreditMonitorDeps,
  type CreditNotices,
  type CreditStatus,
} from "./credit-monitor.ts";
export { DepletionWatcher, type DepletionWatcherDeps } from "./depletion-watcher.ts";
export { type BillingMetrics, createBillingMetrics } from "./metrics.ts";
export { closedByMonitor, creditNotices } from "./notices.ts";
export { BillingScheduler, type BillingSchedulerEvents } from "./scheduler.ts";
export { type WithdrawReport, withdrawCycle } from "./withdrawals.ts";

/** The reference: a grace period of 0s means its default. */
const DEFAULT_GRACE_MS = 5 * 60_000;

export interface BillingDeps {
  config: Pick<
    ProviderConfig,
    | "providerUuid"
    | "withdrawIntervalMs"
    | "creditCheckIntervalMs"
    | "creditCheckErrorThreshold"
    | "creditCheckRetryIntervalMs"
    | "creditCheckZeroGracePeriodMs"
  >;
  chain: Pick<
    ChainPort,
    | "providerWithdrawable"
    | "withdrawAll"
    | "leasesByProvider"
    | "leasesByTenant"
    | "creditEstimate"
    | "closeLeases"
  >;
  clock: Clock;
  logger: Logger;
  registry?: Registry;
  notices?: CreditNotices;
  /** The depletion watcher's own consumer on the chain feed (none: no watcher). */
  consumer?: FeedConsumer;
  /** A lease the credit monitor closed: deprovision it (the lifecycle's close path). */
  leaseClosed?(leaseUuid: string, tenant: string): void;
}

export interface Billing {
  scheduler: BillingScheduler;
  monitor: CreditMonitor;
  start(): void;
  /** Stops the watcher and the scheduler (a run in flight is interrupted); idempotent. */
  stop(): Promise<void>;
}

export function createBilling(d: BillingDeps): Billing {
  const metrics = createBillingMetrics(d.registry);
  const withdrawDeps = {
    chain: d.chain,
    providerUuid: d.config.providerUuid,
    clock: d.clock,
    logger: d.logger.child({ job: "withdraw" }),
    metrics,
  };
  const c = d.config;
  const monitor = new CreditMonitor({
    chain: d.chain,
    providerUuid: c.providerUuid,
    clock: d.clock,
    logger: d.logger.child({ job: "credit" }),
    metrics,
    intervalMs: c.creditCheckIntervalMs > 0 ? c.creditCheckIntervalMs : c.withdrawIntervalMs,
    retryIntervalMs: c.creditCheckRetryIntervalMs,
    errorThreshold: c.creditCheckErrorThreshold,
    gracePeriodMs: c.creditCheckZeroGracePeriodMs > 0 ? c.creditCheckZeroGracePeriodMs : DEFAULT_GRACE_MS,
    ...definedOnly({ notices: d.notices, leaseClosed: d.leaseClosed }),
  });
  const scheduler = new BillingScheduler({
    clock: d.clock,
    logger: d.logger,
    withdrawIntervalMs: c.withdrawIntervalMs,
    creditIntervalMs: c.creditCheckIntervalMs,
    jobs: {
      withdraw: (signal) => withdrawCycle(withdrawDeps, signal),
      creditCheck: (signal) => monitor.checkAll(signal),
      tenantCheck: (tenant, signal) => monitor.checkTenant(tenant, signal),
    },
  });
  const consumer = d.consumer;
  const watcher =
    consumer === undefined
      ? undefined
      : new DepletionWatcher({
          consumer,
          providerUuid: c.providerUuid,
          holds: (tenant) => monitor.holds(tenant),
          checkTenant: (tenant) => scheduler.checkTenantNow(tenant),
          checkAll: () => scheduler.checkAllSoon(),
          logger: d.logger.child({ job: "depletion-watcher" }),
        });
  return {
    scheduler,
    monitor,
    start() {
      watcher?.start();
      scheduler.start();
    },
    async stop() {
      await watcher?.stop();
      await scheduler.stop();
    },
  };
}
