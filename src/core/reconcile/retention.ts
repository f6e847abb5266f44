import type { LiveLeases } from "./cleanup.ts";
import type { Evidence } from "./evidence.ts";
import type { Action, PlanInput } from "./types.ts";

/**
 * Retained placements: rows whose owner soft-deleted the lease's data on close. They are
 * kept for routing a restore, so only the owner's own word retires one: its
 * identity-checked /retentions not listing the lease on `RETENTION_MISSES_TO_RETIRE`
 * consecutive *complete* sweeps (a degraded sweep counts for nothing, either way), and no
 * restore of it in flight. A sighting resets the count.
 *
 * A lease that is not live on chain and has no attempt, whose data exactly one trusted
 * /retentions lists and no backend runs, is adopted as retained at that backend when it has
 * no placement record, or when its record confirms that same backend as owner without the
 * retained mark: the store learns where the data is, so a restore can be routed to it (the
 * lost-callback case).
 */
export const RETENTION_MISSES_TO_RETIRE = 2;

export function retention(
  input: PlanInput,
  ev: Evidence,
  live: LiveLeases,
  unknown: ReadonlySet<string>,
): Action[] {
  const out: Action[] = [];
  const retained = input.store.retained ?? new Map();
  if (ev.complete) {
    for (const [lease, r] of [...retained].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!ev.answeredBy(r.owner)) continue;
      if (ev.retainers(lease).includes(r.owner)) {
        if (r.misses > 0) out.push({ kind: "retention_seen", lease, backend: r.owner });
        continue;
      }
      const retire = !r.restoring && r.misses + 1 >= RETENTION_MISSES_TO_RETIRE;
      out.push({ kind: "retention_missed", lease, backend: r.owner, retire });
    }
  }
  for (const lease of ev.reportedLeases((l) => live.has(l))) {
    if (unknown.has(lease)) continue;
    if (input.store.attempts.has(lease) || retained.has(lease)) continue;
    const holders = ev.retainers(lease);
    if (holders.length !== 1 || ev.reporters(lease).length > 0 || ev.untrusted(lease).length > 0) continue;
    const holder = holders[0] as string;
    const record = input.store.placements.get(lease);
    if (record !== undefined && (record.kind !== "confirmed" || record.owner !== holder)) continue;
    out.push({ kind: "adopt_retention", lease, backend: holder });
  }
  return out.sort((a, b) => (a.lease < b.lease ? -1 : a.lease > b.lease ? 1 : 0));
}
