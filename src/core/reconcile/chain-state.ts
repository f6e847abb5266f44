import { isBillingOnly, TERMINAL_STATES } from "../lease-rules.ts";
import type { ChainLeaseView } from "./types.ts";

/**
 * How the reconciler reads a chain lease state: terminal (core/lease-rules.ts), live
 * (PENDING, ACTIVE), or unknown — a safety state that proves nothing and keeps everything.
 */

export type StateClass = "pending" | "active" | "terminal" | "unknown";

export function classifyState(state: string): StateClass {
  if (state === "LEASE_STATE_PENDING") return "pending";
  if (state === "LEASE_STATE_ACTIVE") return "active";
  return TERMINAL_STATES.has(state) ? "terminal" : "unknown";
}

/**
 * The act phase's gate for every destructive candidate: the exact re-read of that one lease
 * (`undefined`: not found, or the read failed) must report a terminal state.
 */
export function rereadPermitsDestruction(state: string | undefined): boolean {
  return state !== undefined && TERMINAL_STATES.has(state);
}

/** How the bounded exact re-read of one lease ended. */
export type Reread = { kind: "found"; state: string } | { kind: "not_found" } | { kind: "failed" };

export type RereadRefusal = "reread_not_found" | "reread_failed" | "reread_live" | "reread_unknown_state";

/**
 * The same gate with the reason it refused, for fred_reconciler_cleanup_skips_total. Not
 * found is not absence (a lagging node, a reset chain); a failed read proves nothing.
 */
export function rereadGate(r: Reread): { proceed: true } | { proceed: false; reason: RereadRefusal } {
  if (r.kind === "not_found") return { proceed: false, reason: "reread_not_found" };
  if (r.kind === "failed") return { proceed: false, reason: "reread_failed" };
  if (rereadPermitsDestruction(r.state)) return { proceed: true };
  const cls = classifyState(r.state);
  return { proceed: false, reason: cls === "unknown" ? "reread_unknown_state" : "reread_live" };
}

/** A lease whose items all use billing-only SKUs: acknowledged, never provisioned. */
export function isBillingOnlyLease(lease: ChainLeaseView, billingOnlySkus: ReadonlySet<string>): boolean {
  return isBillingOnly(lease.skus, billingOnlySkus);
}

/**
 * The two listings (PENDING, then ACTIVE) are not atomic, so one lease can appear in both,
 * or appear twice in a lagging page walk. Merge to one entry per lease, keeping the state
 * furthest along (chain states only move forward); an unknown state wins over all, so a
 * doubtful lease is deferred rather than acted on.
 */
const RANK: Record<StateClass, number> = { pending: 0, active: 1, terminal: 2, unknown: 3 };

export function mergeListings(chain: readonly ChainLeaseView[]): Map<string, ChainLeaseView> {
  const out = new Map<string, ChainLeaseView>();
  for (const lease of chain) {
    const seen = out.get(lease.uuid);
    if (seen === undefined || RANK[classifyState(lease.state)] > RANK[classifyState(seen.state)]) {
      out.set(lease.uuid, lease);
    }
  }
  return out;
}
