import type { LeaseOutcome } from "../../chain/port.ts";
import { leaseEnded } from "../../core/lease-rules.ts";
import { REJECT_REASONS } from "../lifecycle/index.ts";
import type { LeaseWork, SweepSources } from "./sources.ts";

/**
 * Ends the leases of backends an operator retired as lost (`fred placement
 * retire-backend --lost`, which only records the fact, offline). Each lease named by a
 * lost backend's rows (its confirmed placements, and attempts at it with no placement)
 * is re-read from the chain, inside the lease's serial queue:
 * - ACTIVE: closed on chain with BackendStorageLost;
 * - PENDING: rejected with BackendStorageLost;
 * - ended (the fresh read proves it): its rows are pruned. Until then tenant reads answer
 *   410 backend_storage_lost, so a lease closed by one pass loses its rows on the next;
 * - not returned, or in an unknown state: nothing (absence proves nothing).
 * Conflicts naming a lost backend are left for `fred placement repair`.
 * Runs after every sweep; with no backend retired as lost, no row can name one and the
 * pass (a read of every placement) is skipped.
 */
export interface LostPassReport {
  closed: string[];
  rejected: string[];
  pruned: string[];
  failed: string[];
}

export async function endLeasesOnLostBackends(
  d: SweepSources & { lifecycle: LeaseWork },
  signal: AbortSignal,
): Promise<LostPassReport> {
  const report: LostPassReport = { closed: [], rejected: [], pruned: [], failed: [] };
  if (!d.fleet.anyLost) return report;
  const named = new Map<string, string>();
  for (const p of d.store.placements()) {
    if (p.owner !== undefined && d.fleet.isLost(p.owner)) named.set(p.leaseUuid, p.owner);
  }
  for (const a of d.store.unresolvedAttempts()) {
    if (d.fleet.isLost(a.backend) && d.store.placement(a.leaseUuid) === undefined)
      named.set(a.leaseUuid, a.backend);
  }
  for (const [lease, backend] of [...named].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (signal.aborted) break;
    await d.lifecycle.runForLease(lease, async () => {
      const log = d.logger.child({ lease_uuid: lease, backend });
      try {
        const current = await d.chain.getLease(lease, signal);
        if (current === undefined) return;
        if (leaseEnded(current.state)) {
          d.store.retireAttempt(lease, backend);
          if (d.store.prunePlacement(lease)) report.pruned.push(lease);
          log.info("lease on a lost backend ended: its rows are pruned");
          return;
        }
        let outcome: LeaseOutcome | undefined;
        if (current.state === "LEASE_STATE_ACTIVE") {
          [outcome] = await d.chain.closeLeases([lease], REJECT_REASONS.backendStorageLost, signal);
        } else if (current.state === "LEASE_STATE_PENDING") {
          [outcome] = await d.chain.reject([lease], REJECT_REASONS.backendStorageLost, signal);
        } else return;
        if (outcome?.status === "closed") report.closed.push(lease);
        else if (outcome?.status === "rejected") report.rejected.push(lease);
        else if (outcome?.status !== "already_done") report.failed.push(lease);
        log.warn({ outcome: outcome?.status }, "lease on a lost backend ended on chain: BackendStorageLost");
      } catch (err) {
        if (signal.aborted) throw err;
        report.failed.push(lease);
        log.warn({ err }, "lease on a lost backend: chain read or transaction failed; the next pass retries");
      }
    });
  }
  return report;
}
