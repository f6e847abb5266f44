import type { LifecycleDeps } from "./deps.ts";
import { rejectionForFailure } from "./reasons.ts";

/**
 * Applies an authenticated backend callback to durable state, inside the lease's serial
 * queue. Operation callbacks settle the exact write-ahead attempt; lifecycle callbacks
 * speak only for the confirmed owner. Anything stale, unknown or from another backend
 * is ignored and changes nothing (the caller still answers 200).
 */
export interface VerifiedCallback {
  /** The backend whose key verified the signature (selected by backend_storage_id). */
  backend: string;
  leaseUuid: string;
  capability: { kind: "operation" | "lifecycle"; id: string };
  status: "success" | "failed" | "deprovisioned";
  error: string;
}

export type ApplyResult =
  | "acknowledging"
  | "rejecting"
  | "settled-conflict"
  | "retired"
  | "observed"
  | "ignored-stale";

export function applyCallback(d: LifecycleDeps, cb: VerifiedCallback): ApplyResult {
  const log = d.logger.child({
    lease_uuid: cb.leaseUuid,
    backend: cb.backend,
    [cb.capability.kind === "operation" ? "operation_id" : "lifecycle_id"]: cb.capability.id,
  });
  if (cb.capability.kind === "lifecycle") {
    const placement = d.store.placement(cb.leaseUuid);
    if (placement?.state !== "confirmed" || placement.owner !== cb.backend) return "ignored-stale";
    if (cb.status !== "deprovisioned") return "observed";
    d.store.retirePlacement(cb.leaseUuid, cb.backend);
    log.info("teardown reported complete; placement retired");
    return "retired";
  }
  const attempt = d.store.attemptFor(cb.leaseUuid);
  if (attempt?.operationId !== cb.capability.id || attempt.backend !== cb.backend) return "ignored-stale";
  if (cb.status !== "success" && cb.status !== "failed") return "ignored-stale";
  const now = d.clock.now();
  const settled = d.store.settleOperation(cb.leaseUuid, cb.capability.id, cb.status, now);
  if (settled.kind !== "settled") return "ignored-stale";
  d.observe.provisionSettled(cb.backend, cb.status, now - attempt.createdAt);
  if (cb.status === "failed") {
    const reason = rejectionForFailure(cb.error);
    log.info({ reason }, "backend reported the provision failed; rejecting");
    d.acks.reject(cb.leaseUuid, reason);
    return "rejecting";
  }
  if (settled.placement?.state !== "confirmed") {
    log.warn("success callback produced a placement conflict; left for the operator");
    return "settled-conflict";
  }
  log.info("provision succeeded; acknowledging");
  d.acks.acknowledge(cb.leaseUuid);
  return "acknowledging";
}
