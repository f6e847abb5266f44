import { withDeadline } from "../../core/async/index.ts";
import { FredError } from "../../core/errors.ts";
import type { LifecycleDeps } from "./deps.ts";
import type { VerifiedCallback } from "./settle.ts";

/**
 * A `deprovisioned` report on a lease's lifecycle URL is evidence to check, not a fact:
 * before the placement is retired, the lease is re-read on chain (one exact read) and,
 * while the chain still calls it live, the owner's own record of it is read. Both reads
 * are bounded, so the callback ingress still answers the backend promptly.
 *
 * - `ended`: the chain reports the lease CLOSED, REJECTED or EXPIRED; the report stands.
 * - `running`: the lease is live and the owner reports its workload in a working state
 *   (provisioning, ready, restarting, updating): the report contradicts both, and the
 *   placement keeps its lifecycle.
 * - `lost`: the lease is live and the owner has no record of it (404) or reports it in
 *   another state: a lost workload, left to the reconciler's rules (re-provision on the
 *   owner); the placement is kept so the sweep sees it as such.
 * - `unknown`: the chain does not know the lease, or reports a state this build cannot
 *   read: nothing is changed, and the placement-pruning pass decides later.
 *
 * A read that fails or times out throws (the callback answers 503 and the backend sends it
 * again later): silence and errors never retire anything.
 */
export type TeardownEvidence = "ended" | "running" | "lost" | "unknown";

/** How long each of the two reads may take. */
export const TEARDOWN_READ_BUDGET_MS = 10_000;

const ENDED = new Set(["LEASE_STATE_CLOSED", "LEASE_STATE_REJECTED", "LEASE_STATE_EXPIRED"]);
const LIVE = new Set(["LEASE_STATE_PENDING", "LEASE_STATE_ACTIVE"]);
const WORKING = new Set(["provisioning", "ready", "restarting", "updating"]);

/** Whether applying `cb` now would retire the lease's confirmed placement. */
export function wouldRetire(d: Pick<LifecycleDeps, "store">, cb: VerifiedCallback): boolean {
  if (cb.capability.kind !== "lifecycle" || cb.status !== "deprovisioned" || cb.retained === true)
    return false;
  const p = d.store.placement(cb.leaseUuid);
  return p?.state === "confirmed" && p.owner === cb.backend && p.lifecycleId === cb.capability.id;
}

/** The chain's and the owner's word on a reported teardown; call inside the lease's queue. */
export async function checkTeardown(
  d: Pick<LifecycleDeps, "chain" | "clients" | "clock">,
  cb: VerifiedCallback,
  signal: AbortSignal,
  budgetMs = TEARDOWN_READ_BUDGET_MS,
): Promise<TeardownEvidence> {
  const lease = await withDeadline(
    d.clock,
    budgetMs,
    signal,
    () => new FredError("ERR_CHAIN_READ_TIMEOUT", "lease re-read for a teardown report timed out"),
    (s) => d.chain.getLease(cb.leaseUuid, s),
  );
  if (lease === undefined) return "unknown";
  if (ENDED.has(lease.state)) return "ended";
  if (!LIVE.has(lease.state)) return "unknown";
  const client = d.clients.get(cb.backend);
  if (client === undefined) return "unknown";
  const record = await withDeadline(
    d.clock,
    budgetMs,
    signal,
    () => new FredError("ERR_BACKEND_TIMEOUT", `backend ${cb.backend}: record read timed out`),
    (s) => client.provisionInfo(cb.leaseUuid, s),
  );
  return record !== undefined && WORKING.has(record.status) ? "running" : "lost";
}
