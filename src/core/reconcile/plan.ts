import { classifyState, mergeListings } from "./chain-state.ts";
import { cleanup, type LiveLeases } from "./cleanup.ts";
import { Evidence } from "./evidence.ts";
import { decideLive } from "./live.ts";
import { retention } from "./retention.ts";
import type { Row } from "./rows.ts";
import type { Action, CleanupSkip, PlanInput } from "./types.ts";

/**
 * The reconciler's decision: chain ∪ backend inventories ∪ placement store → actions. Pure:
 * no I/O, no clock (`input.now`), no randomness; the same input always yields the same plan.
 *
 * Actions come in three groups, in this order: projection (durable evidence: confirm an
 * attempt, adopt or quarantine a placement), lease lifecycle (acknowledge, reject, close,
 * provision, redeliver, custom domains), and destructive candidates (deprovision an orphan,
 * drop a payload, prune a placement), which the act phase executes only after an exact chain
 * re-read of that lease reports it ended (`rereadPermitsDestruction`).
 */
export interface Plan {
  actions: Action[];
  /** The State Matrix row that decided each lease the plan looked at. */
  decisions: Map<string, Row>;
  skips: CleanupSkip[];
  /** Backends that answered both inventories. */
  answered: readonly string[];
  /** Every configured backend answered (otherwise the sweep is degraded). */
  complete: boolean;
}

const PHASE: Record<Action["kind"], number> = {
  confirm_attempt: 0,
  adopt_placement: 0,
  quarantine: 0,
  retention_seen: 0,
  retention_missed: 0,
  adopt_retention: 0,
  acknowledge: 1,
  reject: 1,
  close: 1,
  provision: 1,
  reprovision: 1,
  redeliver: 1,
  reconcile_custom_domain: 1,
  restore_lifecycle: 1,
  lease_error: 1,
  orphan_deprovision_candidate: 2,
  payload_cleanup_candidate: 2,
  placement_prune_candidate: 2,
};

export function plan(input: PlanInput): Plan {
  const ev = new Evidence(input);
  const decisions = new Map<string, Row>();
  const lifecycle: Action[] = [];
  const unknown = new Set<string>();
  const terminal = new Set<string>();
  const merged = mergeListings(input.chain);
  // Live leases are nearly all of them: asked of the merged listing, not copied into a set.
  const live: LiveLeases = {
    has: (lease) => {
      const l = merged.get(lease);
      return l !== undefined && isLive(classifyState(l.state));
    },
  };
  for (const lease of merged.values()) {
    const cls = classifyState(lease.state);
    if (cls === "unknown") {
      unknown.add(lease.uuid);
      decisions.set(lease.uuid, "unknownState");
    } else if (cls === "terminal") {
      terminal.add(lease.uuid);
    } else {
      const d = decideLive(input, ev, lease, cls === "pending");
      decisions.set(lease.uuid, d.row);
      lifecycle.push(...d.actions);
    }
  }
  const swept = cleanup(input, ev, live, unknown);
  for (const lease of swept.orphans)
    decisions.set(lease, terminal.has(lease) ? "terminalOrphan" : "absentOrphan");
  // A stable sort keeps each group in lease order while projection precedes what depends on it.
  const kept = retention(input, ev, live, unknown);
  const actions = [...kept, ...lifecycle, ...swept.actions].sort((a, b) => PHASE[a.kind] - PHASE[b.kind]);
  return { actions, decisions, skips: swept.skips, answered: ev.answered, complete: ev.complete };
}

function isLive(cls: ReturnType<typeof classifyState>): boolean {
  return cls === "pending" || cls === "active";
}
