import type { ChainLease } from "../../chain/port.ts";
import type { PayloadSource, ProvisionTarget } from "../../core/reconcile/index.ts";
import { newUuidV4 } from "../../core/uuid.ts";
import type { Lifecycle, ProvisionStep } from "../lifecycle/index.ts";
import type { Attempt, StoredPayload } from "../store/index.ts";

/**
 * A provision the reconciler sends on a backend it already knows (the lease's owner, or a
 * backend chosen within the plan's scope): re-provisioning an ACTIVE lease whose workload
 * failed, or provisioning one its owner lost. Runs inside the lease's queue. The attempt is
 * write-ahead like every provision (committed and durable before the call) and carries a
 * new operation id; the lease is never moved, and the backend keeps the lease's volumes
 * across a re-provision (it removes only the failed release's containers).
 */
export type ReconcileProvision = ProvisionStep | "skipped";

export async function provisionOn(
  lc: Lifecycle,
  lease: ChainLease,
  target: ProvisionTarget,
  source: PayloadSource,
  reprovision: boolean,
  signal: AbortSignal,
): Promise<ReconcileProvision> {
  const d = lc.deps;
  const log = d.logger.child({ lease_uuid: lease.uuid });
  // The store may have moved since the plan was made (a callback, the event feed).
  if (d.store.attemptFor(lease.uuid) !== undefined || lc.provisioner.inFlight.has(lease.uuid))
    return "skipped";
  const placement = d.store.placement(lease.uuid);
  let backend: string;
  if ("backend" in target) {
    backend = target.backend;
    if (placement !== undefined && (placement.state !== "confirmed" || placement.owner !== backend))
      return "skipped";
    if (reprovision && placement === undefined) return "skipped";
  } else {
    if (placement !== undefined) return "skipped";
    const decision = d.router.choose(lease.items[0]?.skuUuid ?? "");
    if (decision.kind !== "backend" || !target.scope.includes(decision.backend)) return "skipped";
    backend = decision.backend;
  }
  const payload = payloadFor(lc, lease, source);
  if (payload === "missing") {
    log.warn(
      { backend, payload: source },
      "reconciler: no payload to provision with; left for a later sweep",
    );
    return "skipped";
  }
  const attempt: Attempt = {
    leaseUuid: lease.uuid,
    backend,
    operationId: newUuidV4(),
    kind: "provision",
    createdAt: d.clock.now(),
  };
  if (d.store.recordAttempt(attempt) === "lease-busy") return "skipped";
  await d.store.durable();
  log.info(
    { backend, operation_id: attempt.operationId, reprovision },
    "reconciler: provisioning on the lease's backend",
  );
  return lc.provisioner.send(attempt, lease, payload, signal);
}

function payloadFor(
  lc: Lifecycle,
  lease: ChainLease,
  source: PayloadSource,
): StoredPayload | undefined | "missing" {
  if (source === "none") return undefined;
  // "latest_release" (rebuilding a payload from the owner's release history) is not
  // available here: such a lease waits until its payload is uploaded again.
  if (source !== "stored") return "missing";
  const stored = lc.deps.payloads?.get(lease.uuid);
  if (stored === undefined || stored.sha256 !== lease.metaHash) return "missing";
  return stored;
}
