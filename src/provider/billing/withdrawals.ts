import type { ChainPort, CoinAmount } from "../../chain/port.ts";
import { retry } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { coinText } from "./credit-math.ts";
import type { BillingMetrics, WithdrawOutcome } from "./metrics.ts";

/**
 * One withdraw cycle: ask what the provider's leases owe (a dry run; a cycle with nothing
 * to settle sends no tx and pays no fee), then the provider-wide MsgWithdraw page by page
 * following next_key, at most max_withdraw_iterations pages (the chain client enforces
 * the page size and the cap). A cycle stopped at the cap is reported and the next one
 * starts over from the first lease: the chain settles every lease up to its block time,
 * so nothing is paid twice and the leases beyond the cap are reached next time.
 *
 * Leases the chain closes while settling them (credit exhausted) come back as
 * `lease_auto_closed` events on the feed; the lifecycle deprovisions them through its
 * normal close path, and a missed event is caught by the recovery pass the resync starts.
 */
export interface WithdrawDeps {
  chain: Pick<ChainPort, "providerWithdrawable" | "withdrawAll">;
  providerUuid: string;
  clock: Clock;
  logger: Logger;
  metrics: BillingMetrics;
}

export interface WithdrawReport {
  outcome: WithdrawOutcome;
  /** The block height of each page's tx, in order. */
  heights: number[];
  /** Leases settled (auto-closed ones included), summed over the pages. */
  settled: bigint;
  amounts: CoinAmount[];
  failedLeaseUuids: string[];
}

/** The withdrawable query's retries: a lagging node or a dropped connection. */
const QUERY_RETRY = { attempts: 3, backoff: { initialMs: 1_000, maxMs: 10_000 } } as const;

function sum(pages: readonly { amounts: readonly CoinAmount[] }[]): CoinAmount[] {
  const by = new Map<string, bigint>();
  for (const p of pages)
    for (const c of p.amounts) by.set(c.denom, (by.get(c.denom) ?? 0n) + BigInt(c.amount));
  return [...by].sort(([a], [b]) => (a < b ? -1 : 1)).map(([denom, n]) => ({ denom, amount: n.toString() }));
}

export async function withdrawCycle(d: WithdrawDeps, signal: AbortSignal): Promise<WithdrawReport> {
  const report: WithdrawReport = {
    outcome: "skipped",
    heights: [],
    settled: 0n,
    amounts: [],
    failedLeaseUuids: [],
  };
  try {
    const owed = await retry(() => d.chain.providerWithdrawable(d.providerUuid, signal), {
      ...QUERY_RETRY,
      clock: d.clock,
      signal,
    });
    const anything = owed.leaseCount > 0n || owed.amounts.some((c) => BigInt(c.amount) > 0n);
    if (!anything) {
      d.metrics.withdrawCycle("skipped");
      d.logger.debug("withdraw cycle: nothing to settle");
      return report;
    }
    const summary = await d.chain.withdrawAll(d.providerUuid, signal);
    report.heights = summary.pages.map((p) => p.height);
    report.amounts = sum(summary.pages);
    for (const p of summary.pages) {
      report.settled += p.withdrawalCount;
      report.failedLeaseUuids.push(...p.failedLeaseUuids);
    }
    report.outcome = summary.truncated ? "incomplete" : "complete";
  } catch (err) {
    if (signal.aborted) throw err;
    report.outcome = "failed";
    d.metrics.withdrawCycle("failed");
    d.logger.warn({ err }, "withdraw cycle failed; the next one starts over");
    return report;
  }
  d.metrics.withdrawCycle(report.outcome);
  d.metrics.settled(Number(report.settled), report.amounts);
  const fields = {
    pages: report.heights.length,
    leases_settled: report.settled.toString(),
    amount: coinText(report.amounts),
    failed_leases: report.failedLeaseUuids.length,
  };
  if (report.outcome === "incomplete")
    d.logger.warn(fields, "withdraw cycle stopped at max_withdraw_iterations; the next cycle starts over");
  else d.logger.info(fields, "withdraw cycle complete");
  if (report.failedLeaseUuids.length > 0)
    d.logger.warn(
      { lease_uuids: report.failedLeaseUuids.slice(0, 20) },
      "the chain could not settle some leases",
    );
  return report;
}
