import { classifyState, isBillingOnlyLease, type PlanInput } from "../../core/reconcile/index.ts";

/**
 * The placement inventory's readiness beyond its baseline (README seed, Health Check),
 * from the latest sweep. `awaiting`: backends that have not answered a sweep since startup
 * although they could hold a positive providerd has no record of — an unresolved attempt
 * there, or an ACTIVE lease with neither placement row nor attempt (it could be anywhere
 * silent). `fencedMayHold`: a backend is fenced while such an ACTIVE lease exists. A
 * silent backend with nothing unrecorded to report keeps /readyz as it was: degraded.
 */
export interface InventoryReadiness {
  awaiting: readonly string[];
  fencedMayHold: boolean;
}

export const READY_INVENTORY: InventoryReadiness = Object.freeze({ awaiting: [], fencedMayHold: false });

export function inventoryReadiness(
  input: PlanInput,
  /** Unfenced backends that have answered a sweep since startup. */
  everAnswered: ReadonlySet<string>,
  fenced: ReadonlySet<string>,
): InventoryReadiness {
  const unheard = [...input.backends.keys()].filter((b) => !fenced.has(b) && !everAnswered.has(b));
  // Every backend heard from, none fenced: nothing below can be set (and no lease is scanned).
  if (unheard.length === 0 && fenced.size === 0) return READY_INVENTORY;
  const { placements, attempts } = input.store;
  const recordless = input.chain.some(
    (l) =>
      classifyState(l.state) === "active" &&
      !isBillingOnlyLease(l, input.billingOnlySkus) &&
      !placements.has(l.uuid) &&
      !attempts.has(l.uuid),
  );
  const attempted = new Set([...attempts.values()].map((a) => a.backend));
  const awaiting = unheard.filter((b) => recordless || attempted.has(b));
  return { awaiting, fencedMayHold: fenced.size > 0 && recordless };
}
