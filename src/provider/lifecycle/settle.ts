import { withDeadline } from "../../core/async/index.ts";
import { FredError } from "../../core/errors.ts";
import { leaseEnded, leaseLive } from "../../core/lease-rules.ts";
import { type Command, completeMaintenance } from "../maintenance/index.ts";
import type { LifecycleDeps } from "./deps.ts";
import { rejectionForFailure } from "./reasons.ts";

// A backend callback, from evidence to durable state: `checkTeardown` weighs a
// `deprovisioned` report against the chain and the owner, `applyCallback` settles it, and
// `maskRunningPayloads` then trims what the payload store keeps of a running lease.

/**
 * Applies an authenticated backend callback to durable state, inside the lease's serial
 * queue. Operation callbacks settle the exact write-ahead attempt; lifecycle callbacks
 * speak only for the confirmed owner, on the exact lifecycle id it was confirmed with.
 * Anything stale, unknown or from another backend is ignored and changes nothing (the
 * caller still answers 200). The acknowledgement or rejection a callback calls for is
 * returned, not sent: the caller sends it once the change is on disk.
 */
export interface VerifiedCallback {
  /** The backend whose key verified the signature (selected by backend_storage_id). */
  backend: string;
  leaseUuid: string;
  capability: { kind: "operation" | "lifecycle"; id: string };
  status: "success" | "failed" | "deprovisioned";
  error: string;
  /** `deprovisioned` only: the backend soft-deleted the lease's data instead of destroying it. */
  retained?: boolean;
  /** An exact restart/update completion (lifecycle URL only): the command and its echoed stamp. */
  maintenanceId?: string;
  maintenanceAdmittedAt?: string;
}

export type ApplyResult =
  | "acknowledging"
  | "rejecting"
  | "settled-conflict"
  | "retired"
  | "retained"
  | "observed"
  | "ignored-stale"
  /** A `deprovisioned` report the chain and the owner's own record contradict: nothing changed. */
  | "contradicted"
  /** A `deprovisioned` report for a live lease whose workload is gone: left to the reconciler. */
  | "lost";

export type ChainAction = { kind: "acknowledge" } | { kind: "reject"; reason: string };

export interface Applied {
  result: ApplyResult;
  chain?: ChainAction;
  /** An update whose exact success was confirmed: its manifest is to become the payload. */
  promote?: Command;
}

/** Queues what an applied callback calls for on chain (after its change is durable). */
export function sendChainAction(d: Pick<LifecycleDeps, "acks">, leaseUuid: string, a: Applied): void {
  if (a.chain?.kind === "acknowledge") d.acks.acknowledge(leaseUuid);
  else if (a.chain?.kind === "reject") d.acks.reject(leaseUuid, a.chain.reason);
}

export function applyCallback(d: LifecycleDeps, cb: VerifiedCallback): Applied {
  // The lease's fields go with each line, not into a child logger (which serializes its
  // bindings when made, whether or not anything is logged at the configured level).
  const ids = {
    lease_uuid: cb.leaseUuid,
    backend: cb.backend,
    [cb.capability.kind === "operation" ? "operation_id" : "lifecycle_id"]: cb.capability.id,
  };
  const log = d.logger;
  if (cb.capability.kind === "lifecycle") {
    const placement = d.store.placement(cb.leaseUuid);
    if (
      placement?.state !== "confirmed" ||
      placement.owner !== cb.backend ||
      placement.lifecycleId !== cb.capability.id
    ) {
      return { result: "ignored-stale" };
    }
    if (cb.status !== "deprovisioned") {
      const promote = cb.maintenanceId === undefined ? undefined : completeMaintenance(d, cb);
      return promote === undefined ? { result: "observed" } : { result: "observed", promote };
    }
    if (cb.retained === true) {
      // The data is restorable: the row stays (owner and storage identity) for routing a restore.
      const storageId = d.fleet.pins().get(cb.backend) ?? "";
      d.store.retained.mark(cb.leaseUuid, cb.backend, storageId, d.clock.now());
      log.info(ids, "teardown reported complete with the data retained; placement kept as retained");
      return { result: "retained" };
    }
    d.store.retirePlacement(cb.leaseUuid, cb.backend);
    log.info(ids, "teardown reported complete; placement retired");
    return { result: "retired" };
  }
  if (cb.status !== "success" && cb.status !== "failed") return { result: "ignored-stale" };
  const now = d.clock.now();
  // Only the exact attempt, at the backend that called back, is settled: read and settled in
  // one step (anything else changes nothing).
  const settled = d.store.settleOperation(cb.leaseUuid, cb.capability.id, cb.status, now, cb.backend);
  if (settled.kind !== "settled") return { result: "ignored-stale" };
  const attempt = settled.attempt;
  d.observe.provisionSettled(cb.backend, cb.status, now - attempt.createdAt);
  if (cb.status === "failed") {
    const reason = rejectionForFailure(cb.error, attempt.kind);
    log.info({ ...ids, reason, kind: attempt.kind }, "backend reported the operation failed; rejecting");
    return { result: "rejecting", chain: { kind: "reject", reason } };
  }
  if (settled.placement?.state !== "confirmed") {
    log.warn(ids, "success callback produced a placement conflict; left for the operator");
    return { result: "settled-conflict" };
  }
  log.info({ ...ids, kind: attempt.kind }, "operation succeeded; acknowledging");
  return { result: "acknowledging", chain: { kind: "acknowledge" } };
}

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
  if (leaseEnded(lease.state)) return "ended";
  if (!leaseLive(lease.state)) return "unknown";
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

/**
 * A tenant's registry passwords stay in providerd's payload store only until the backend
 * runs the lease: from then on the backend's journal holds the one real copy (it puts them
 * back into a masked manifest sent again), and the payload store keeps the masked form.
 * Runs after a success callback for its lease, and after each reconciler sweep for every
 * lease still marked (a lost callback, or rows stored before masking existed). A lease
 * whose placement is not confirmed keeps its payload whole: its provision may still need it.
 * A failed write only logs; the next sweep tries again.
 */
export async function maskRunningPayloads(
  d: Pick<LifecycleDeps, "payloads" | "store" | "logger">,
  leases: Iterable<string>,
): Promise<void> {
  const payloads = d.payloads;
  if (payloads === undefined) return;
  let wrote = false;
  for (const lease of leases) {
    // Most leases store no payload: the memoized check spares them the placement read.
    if (!(await payloads.has(lease)) || d.store.placement(lease)?.state !== "confirmed") continue;
    try {
      if (await payloads.mask(lease))
        d.logger.info({ lease_uuid: lease }, "registry passwords masked in the stored payload");
      wrote = true;
    } catch (err) {
      d.logger.warn({ err, lease_uuid: lease }, "masking the stored payload failed; the next sweep retries");
    }
  }
  if (wrote) await payloads.durable();
}
