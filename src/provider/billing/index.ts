import type { Registry } from "prom-client";
import type { ChainPort } from "../../chain/port.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { ProviderConfig } from "../config/index.ts";
import { createBillingMetrics } from "./metrics.ts";
import { BillingScheduler } from "./scheduler.ts";
import { withdrawCycle } from "./withdrawals.ts";

/**
 * Getting paid: the billing scheduler with its jobs, built from explicit dependencies.
 * The composition root creates it, starts it once the lifecycle runs and stops it first
 * on shutdown (a withdrawal in flight is interrupted; the chain settles it next cycle).
 */
export { coinText, depletesAtMs, horizonOf } from "./credit-math.ts";
export { type BillingMetrics, createBillingMetrics } from "./metrics.ts";
export { BillingScheduler, type BillingSchedulerEvents } from "./scheduler.ts";
export { type WithdrawReport, withdrawCycle } from "./withdrawals.ts";

export interface BillingDeps {
  config: Pick<ProviderConfig, "providerUuid" | "withdrawIntervalMs" | "creditCheckIntervalMs">;
  chain: Pick<ChainPort, "providerWithdrawable" | "withdrawAll">;
  clock: Clock;
  logger: Logger;
  registry?: Registry;
}

export function createBilling(d: BillingDeps): BillingScheduler {
  const metrics = createBillingMetrics(d.registry);
  const withdrawDeps = {
    chain: d.chain,
    providerUuid: d.config.providerUuid,
    clock: d.clock,
    logger: d.logger.child({ job: "withdraw" }),
    metrics,
  };
  return new BillingScheduler({
    clock: d.clock,
    logger: d.logger,
    withdrawIntervalMs: d.config.withdrawIntervalMs,
    creditIntervalMs: d.config.creditCheckIntervalMs,
    jobs: { withdraw: (signal) => withdrawCycle(withdrawDeps, signal) },
  });
}
