import { type Command, completeMaintenance } from "../maintenance/index.ts";
import type { LifecycleDeps } from "./deps.ts";
import { rejectionForFailure } from "./reasons.ts";

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
  const log = d.logger.child({
    lease_uuid: cb.leaseUuid,
    backend: cb.backend,
    [cb.capability.kind === "operation" ? "operation_id" : "lifecycle_id"]: cb.capability.id,
  });
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
      log.info("teardown reported complete with the data retained; placement kept as retained");
      return { result: "retained" };
    }
    d.store.retirePlacement(cb.leaseUuid, cb.backend);
    log.info("teardown reported complete; placement retired");
    return { result: "retired" };
  }
  const attempt = d.store.attemptFor(cb.leaseUuid);
  if (attempt?.operationId !== cb.capability.id || attempt.backend !== cb.backend)
    return { result: "ignored-stale" };
  if (cb.status !== "success" && cb.status !== "failed") return { result: "ignored-stale" };
  const now = d.clock.now();
  const settled = d.store.settleOperation(cb.leaseUuid, cb.capability.id, cb.status, now);
  if (settled.kind !== "settled") return { result: "ignored-stale" };
  d.observe.provisionSettled(cb.backend, cb.status, now - attempt.createdAt);
  if (cb.status === "failed") {
    const reason = rejectionForFailure(cb.error, attempt.kind);
    log.info({ reason, kind: attempt.kind }, "backend reported the operation failed; rejecting");
    return { result: "rejecting", chain: { kind: "reject", reason } };
  }
  if (settled.placement?.state !== "confirmed") {
    log.warn("success callback produced a placement conflict; left for the operator");
    return { result: "settled-conflict" };
  }
  log.info({ kind: attempt.kind }, "operation succeeded; acknowledging");
  return { result: "acknowledging", chain: { kind: "acknowledge" } };
}
