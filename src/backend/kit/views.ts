import type { ProvisionInfoBody, ReleaseInfoBody } from "../../core/backend-contract/index.ts";
import type { LeaseRecord, ReleaseRecord } from "./journal/journal.ts";

/** JSON bodies of the read endpoints (the contract's shapes), built from journal records in one place. */
export function provisionInfo(lease: LeaseRecord): ProvisionInfoBody {
  const out: ProvisionInfoBody = {
    lease_uuid: lease.leaseUuid,
    provider_uuid: lease.providerUuid,
    tenant: lease.tenant,
    status: lease.status,
    created_at: new Date(lease.createdAtMs).toISOString(),
    fail_count: lease.failCount,
    quantity: lease.items.reduce((n, i) => n + i.quantity, 0),
    items: lease.items,
    lifecycle_generation: { kind: "typed", id: lease.operationId },
  };
  if (lease.image !== "") out.image = lease.image;
  if (lease.items.length === 1 && lease.items[0] !== undefined) out.sku = lease.items[0].sku;
  if (lease.reason !== undefined) out.reason = lease.reason;
  if (lease.message !== undefined) out.message = lease.message;
  return out;
}

export function releaseInfo(r: ReleaseRecord): ReleaseInfoBody {
  const out: ReleaseInfoBody = {
    version: r.version,
    image: r.image,
    status: r.status,
    created_at: new Date(r.createdAtMs).toISOString(),
  };
  if (r.manifest !== undefined) out.manifest = r.manifest.toString("base64");
  if (r.reason !== undefined) out.reason = r.reason;
  if (r.message !== undefined) out.message = r.message;
  return out;
}
