import type { ChainLease } from "../../chain/port.ts";
import type { PayloadSource, ProvisionTarget } from "../../core/reconcile/index.ts";
import { newUuidV4 } from "../../core/uuid.ts";
import type { Lifecycle, ProvisionStep } from "../lifecycle/index.ts";
import { type Attempt, type StoredPayload, sha256Hex } from "../store/index.ts";

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
  const payload = await payloadFor(lc, lease, backend, source, signal);
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

/**
 * The payload a provision sends. "latest_release": the lease's stored payload is gone (a
 * lost or cleaned payload store), so it is rebuilt from the manifest of the owner's latest
 * active release, and used (and stored again) only if its SHA-256 is the lease's meta_hash;
 * anything else leaves the lease for a later sweep, as a missing payload always did.
 */
async function payloadFor(
  lc: Lifecycle,
  lease: ChainLease,
  backend: string,
  source: PayloadSource,
  signal: AbortSignal,
): Promise<StoredPayload | undefined | "missing"> {
  if (source === "none") return undefined;
  const stored = lc.deps.payloads?.get(lease.uuid);
  // A completed update's manifest is promoted with its own hash (meta_hash no longer matches it).
  if (stored !== undefined) return stored.promoted || stored.sha256 === lease.metaHash ? stored : "missing";
  if (source !== "latest_release") return "missing";
  const rebuilt = await fromLatestRelease(lc, lease, backend, signal);
  if (rebuilt === undefined) return "missing";
  const payloads = lc.deps.payloads;
  if (payloads !== undefined) {
    payloads.put(lease.uuid, rebuilt.payload, rebuilt.storedAt, lease.metaHash);
    await payloads.durable();
  }
  lc.deps.logger.info(
    { lease_uuid: lease.uuid, backend },
    "reconciler: payload rebuilt from the owner's latest active release",
  );
  return rebuilt;
}

async function fromLatestRelease(
  lc: Lifecycle,
  lease: ChainLease,
  backend: string,
  signal: AbortSignal,
): Promise<StoredPayload | undefined> {
  const client = lc.deps.clients.get(backend);
  if (client === undefined || lease.metaHash === "") return undefined;
  let releases: Awaited<ReturnType<typeof client.releases>>;
  try {
    releases = await client.releases(lease.uuid, signal);
  } catch (err) {
    if (signal.aborted) throw err;
    lc.deps.logger.warn({ err, lease_uuid: lease.uuid, backend }, "reconciler: releases unreadable");
    return undefined;
  }
  const latest = (releases ?? [])
    .filter((r) => r.status === "active" && typeof r.manifest === "string")
    .sort((a, b) => b.version - a.version)[0];
  if (latest?.manifest === undefined) return undefined;
  const payload = Buffer.from(latest.manifest, "base64");
  const sha256 = sha256Hex(payload);
  if (sha256 !== lease.metaHash) {
    lc.deps.logger.warn(
      { lease_uuid: lease.uuid, backend, version: latest.version },
      "reconciler: the latest active release does not match meta_hash; payload not rebuilt",
    );
    return undefined;
  }
  return { leaseUuid: lease.uuid, payload, sha256, storedAt: lc.deps.clock.now(), promoted: false };
}
