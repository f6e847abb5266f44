import { FredError } from "../../core/errors.ts";
import { contractItems } from "../../core/lease-rules.ts";
import type { LifecycleDeps } from "./deps.ts";

export type DomainPush = "sent" | "not-placed" | "not-editable";

/**
 * A `lease_custom_domain_set` / `_cleared` event: the lease's owner backend re-applies the
 * domains the chain holds now. The event says which lease changed, never trusted for what:
 * the items come from a fresh chain read, so a replayed or reordered event sends the current
 * truth (the backend's reconcile is idempotent). A lease with no confirmed owner yet gets
 * its domains with its provision request; one that ended is the closer's business. Anything
 * not accepted is thrown, retryable, so the lease step tries again; the periodic sweep sends
 * the same call for every placed lease and remains the backstop.
 */
export async function pushCustomDomains(
  d: LifecycleDeps,
  leaseUuid: string,
  signal: AbortSignal,
): Promise<DomainPush> {
  const owner = d.store.placement(leaseUuid)?.owner;
  if (owner === undefined) return "not-placed";
  const client = d.clients.get(owner);
  if (client === undefined) return "not-placed";
  const lease = await d.chain.getLease(leaseUuid, signal);
  if (lease === undefined || lease.providerUuid !== d.config.providerUuid) return "not-placed";
  if (lease.state !== "LEASE_STATE_ACTIVE" && lease.state !== "LEASE_STATE_PENDING") return "not-editable";
  const out = await client.reconcileCustomDomain(leaseUuid, contractItems(lease.items), signal);
  if (out.kind !== "accepted")
    throw new FredError("ERR_BACKEND_STATUS", `backend ${owner} did not apply the custom domains`, {
      retryable: true,
      details: { outcome: out.kind },
    });
  d.logger.info({ lease_uuid: leaseUuid, backend: owner }, "custom domains sent to the owner backend");
  return "sent";
}
