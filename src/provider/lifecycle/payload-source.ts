import type { ChainLease } from "../../chain/port.ts";
import { payloadAccepted } from "../../core/lease-rules.ts";
import type { PayloadSource } from "../../core/reconcile/index.ts";
import { type StoredPayload, sha256Hex } from "../store/index.ts";
import type { LifecycleDeps } from "./deps.ts";

/**
 * The payload a provision sends, from where its caller says it comes:
 *  - "none": the lease carries no meta_hash, nothing is sent;
 *  - "stored": the tenant's upload, sent only when `payloadAccepted` (core/lease-rules.ts);
 *  - "latest_release": the stored payload is gone (a lost or cleaned payload store), so it is
 *    rebuilt from the manifest of `backend`'s latest active release, and used (and stored
 *    again) only if its SHA-256 is the lease's meta_hash.
 * "missing": nothing acceptable yet; the caller waits (event path) or leaves the lease for a
 * later sweep.
 */
export type ChosenPayload = StoredPayload | undefined | "missing";

export async function choosePayload(
  d: LifecycleDeps,
  lease: ChainLease,
  source: PayloadSource,
  backend: string | undefined,
  signal: AbortSignal,
): Promise<ChosenPayload> {
  if (source === "none") return undefined;
  const stored = d.payloads?.get(lease.uuid);
  if (stored !== undefined) {
    if (payloadAccepted(stored, lease.metaHash)) return stored;
    d.logger.warn({ lease_uuid: lease.uuid }, "stored payload does not match meta_hash; waiting");
    return "missing";
  }
  if (source !== "latest_release" || backend === undefined) return "missing";
  const rebuilt = await fromLatestRelease(d, lease, backend, signal);
  if (rebuilt === undefined) return "missing";
  if (d.payloads !== undefined) {
    d.payloads.put(lease.uuid, rebuilt.payload, rebuilt.storedAt, lease.metaHash);
    await d.payloads.durable();
  }
  d.logger.info(
    { lease_uuid: lease.uuid, backend },
    "payload rebuilt from the owner's latest active release",
  );
  return rebuilt;
}

async function fromLatestRelease(
  d: LifecycleDeps,
  lease: ChainLease,
  backend: string,
  signal: AbortSignal,
): Promise<StoredPayload | undefined> {
  const client = d.clients.get(backend);
  if (client === undefined || lease.metaHash === "") return undefined;
  let releases: Awaited<ReturnType<typeof client.releases>>;
  try {
    releases = await client.releases(lease.uuid, signal);
  } catch (err) {
    if (signal.aborted) throw err;
    d.logger.warn({ err, lease_uuid: lease.uuid, backend }, "releases unreadable; payload not rebuilt");
    return undefined;
  }
  const latest = (releases ?? [])
    .filter((r) => r.status === "active" && typeof r.manifest === "string")
    .sort((a, b) => b.version - a.version)[0];
  if (latest?.manifest === undefined) return undefined;
  const payload = Buffer.from(latest.manifest, "base64");
  const sha256 = sha256Hex(payload);
  if (sha256 !== lease.metaHash) {
    d.logger.warn(
      { lease_uuid: lease.uuid, backend, version: latest.version },
      "the latest active release does not match meta_hash; payload not rebuilt",
    );
    return undefined;
  }
  return {
    leaseUuid: lease.uuid,
    payload,
    sha256,
    uploadSha256: sha256,
    storedAt: d.clock.now(),
    promoted: false,
  };
}
