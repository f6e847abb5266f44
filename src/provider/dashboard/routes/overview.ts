import { fredVersion } from "../../../version.ts";
import { alertsNow } from "../alerts-now.ts";
import type { DashboardContext } from "../context.ts";
import { coins, iso, isoOrNull } from "./shapes.ts";

/**
 * `GET /api/overview`: the provider at a glance. Lease counts by chain state come from the
 * memoized chain listing (`leases.chain_as_of` says when it was read; null when the chain
 * did not answer), record counts from the placement store, provisions and earnings
 * withdrawn from this process's own counters (since `in_process_since`), accrued earnings
 * from the chain's withdrawable amounts.
 */
export async function overview(ctx: DashboardContext) {
  const { s } = ctx;
  const now = s.clock.now();
  const [listing, withdrawable, withdrawn, closesTotal] = await Promise.all([
    ctx.chain.leases(),
    ctx.chain.withdrawable(),
    ctx.withdrawn(),
    ctx.creditCloses(),
  ]);
  const feed = s.feed();
  const counts = s.store.counts();
  const sweep = s.lastSweep();
  const dayAgo = ctx.ring.atOrBefore(86_400);
  return {
    generated_at: iso(now),
    in_process_since: iso(ctx.startedAtMs),
    provider: {
      address: s.config.providerAddress,
      uuid: s.config.providerUuid,
      version: fredVersion().version,
      commit: fredVersion().commit ?? null,
      uptime_seconds: Math.floor((now - ctx.startedAtMs) / 1000),
    },
    chain: {
      height: feed.lastHeight === 0 ? null : feed.lastHeight,
      last_block_at: feed.lastBlockAtMs === 0 ? null : iso(feed.lastBlockAtMs),
      lag_seconds: feed.lastBlockAtMs === 0 ? null : Math.max(0, (now - feed.lastBlockAtMs) / 1000),
    },
    leases: {
      chain: listing.ok ? { ...listing.counts } : null,
      chain_source: "chain",
      chain_as_of: iso(listing.asOfMs),
      records: {
        confirmed: counts.placements,
        provisioning: counts.attempts,
        // The store keeps no failed state: a failed workload is the backend's to report.
        failed: null,
        conflicts: counts.conflicts,
        awaiting_payload: s.awaitingPayload(),
      },
    },
    provisions_per_hour: ctx.activity.provisionsPerHour().map((h) => ({
      hour: iso(h.hourMs),
      succeeded: h.succeeded,
      failed: h.failed,
    })),
    earnings: {
      withdrawn: coins(withdrawn.byDenom),
      withdrawn_source: "process",
      accrued: withdrawable.ok
        ? withdrawable.amounts.map((c) => ({ denom: c.denom, amount: c.amount }))
        : null,
      accrued_as_of: iso(withdrawable.asOfMs),
      last_withdrawal_at: isoOrNull(withdrawn.lastAtMs),
    },
    credit_closes: {
      last_24h: dayAgo === undefined ? closesTotal : Math.max(0, closesTotal - dayAgo.creditCloses),
      total: closesTotal,
      source: "process",
    },
    reconciler: {
      last_sweep_at: isoOrNull(sweep?.endedAt),
      last_success_at: isoOrNull(sweep?.lastSuccessAt),
      outcome: sweep?.outcome ?? null,
      complete: sweep === undefined ? null : sweep.outcome === "complete",
      duration_seconds: sweep === undefined ? null : sweep.durationMs / 1000,
      actions: { ...(sweep?.actions ?? {}) },
    },
    alerts: alertsNow({
      nowMs: now,
      startedAtMs: ctx.startedAtMs,
      lastBlockAtMs: feed.lastBlockAtMs,
      backendHealthy: s.backendHealthy(),
      lastSweepSuccessAtMs: sweep?.lastSuccessAt,
    }),
  };
}
