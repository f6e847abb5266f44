import { type Evidence, recordBackends } from "./evidence.ts";
import {
  type Action,
  type CleanupPass,
  type CleanupSkip,
  type PlanInput,
  REREAD_GATE,
  type SkipReason,
} from "./types.ts";

/**
 * The three passes that delete durable state. Each looks only at leases that are not live in
 * the snapshot (absent from it, or listed in a terminal state) and only proposes candidates:
 * the act phase deletes one after an exact chain re-read of that lease reports it ended.
 * A lease listed in an unknown state is skipped outright. They run on degraded sweeps too,
 * scoped to the backends that answered: a silent backend's absence or presence is no evidence.
 *
 * `live` and `unknown` are the snapshot's leases by class.
 */
export interface CleanupResult {
  actions: Action[];
  skips: CleanupSkip[];
  /** Leases the orphan pass proposed for teardown (for the decision table). */
  orphans: Set<string>;
}

/** Whether the snapshot lists a lease as PENDING or ACTIVE. */
export interface LiveLeases {
  has(lease: string): boolean;
}

export function cleanup(
  input: PlanInput,
  ev: Evidence,
  live: LiveLeases,
  unknown: ReadonlySet<string>,
): CleanupResult {
  const out: CleanupResult = { actions: [], skips: [], orphans: new Set() };
  const skip = (pass: CleanupPass, lease: string, reason: SkipReason) =>
    out.skips.push({ pass, lease, reason });
  const eligible = (pass: CleanupPass, lease: string): boolean => {
    if (live.has(lease)) return false;
    if (unknown.has(lease)) skip(pass, lease, "unknown_chain_state");
    return !unknown.has(lease);
  };

  // Orphan deprovision: workloads a backend reports, and unresolved attempts, of ended leases.
  const targets = new Map<string, Set<string>>();
  const target = (lease: string, backend: string) => {
    const set = targets.get(lease) ?? new Set<string>();
    targets.set(lease, set.add(backend));
  };
  for (const lease of ev.reportedLeases((l) => live.has(l))) {
    if (!eligible("orphan", lease)) continue;
    for (const b of ev.reporters(lease)) target(lease, b);
    if (ev.untrusted(lease).length > 0) skip("orphan", lease, "untrusted");
  }
  for (const [lease, attempt] of input.store.attempts) {
    if (live.has(lease) || unknown.has(lease)) continue;
    if (ev.answeredBy(attempt.backend)) target(lease, attempt.backend);
    else skip("orphan", lease, "backend_silent");
  }
  for (const lease of [...targets.keys()].sort()) {
    out.orphans.add(lease);
    for (const backend of [...targets.get(lease)!].sort()) {
      const retireAttempt = input.store.attempts.get(lease)?.backend === backend;
      out.actions.push({
        kind: "orphan_deprovision_candidate",
        gate: REREAD_GATE,
        lease,
        backend,
        retireAttempt,
      });
    }
  }

  // Payload cleanup: reads no backend state at all.
  // Live leases are left out before sorting: they are nearly all of them, and yield nothing.
  const notLive = <T>(entries: Iterable<T>, lease: (e: T) => string): T[] => {
    const kept: T[] = [];
    for (const e of entries) if (!live.has(lease(e))) kept.push(e);
    return kept;
  };
  for (const lease of notLive(input.store.payloads, (l) => l).sort()) {
    if (eligible("payload", lease))
      out.actions.push({ kind: "payload_cleanup_candidate", gate: REREAD_GATE, lease });
  }

  // Placement pruning: the record's own backends answered, none still holds the lease, no
  // attempt is in flight, and the record is past its grace window.
  const records = notLive(input.store.placements, ([lease]) => lease);
  for (const [lease, placement] of records.sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!eligible("placement", lease)) continue;
    const backends = recordBackends(placement);
    let reason: SkipReason | undefined;
    if (placement.kind === "unusable") reason = "record_unusable";
    else if (input.store.retained?.has(lease) === true) reason = "retained";
    else if (backends.some((b) => !ev.answeredBy(b))) reason = "backend_silent";
    else if (ev.reporters(lease).length + ev.retainers(lease).length + ev.untrusted(lease).length > 0)
      reason = "on_backend";
    else if (input.store.attempts.has(lease)) reason = "in_flight";
    else if (input.now - placement.updatedAt < input.placementGraceMs) reason = "grace_window";
    if (reason === undefined)
      out.actions.push({ kind: "placement_prune_candidate", gate: REREAD_GATE, lease });
    else skip("placement", lease, reason);
  }
  return out;
}
