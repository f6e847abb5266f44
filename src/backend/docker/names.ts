import { createHash } from "node:crypto";

/**
 * Names and labels of everything this backend creates on the engine. Names make
 * resources findable by a human; labels make them findable by recovery and let every
 * destructive call prove that a resource is still the one it means (stale-handle safety).
 */

export const LABEL = {
  managed: "fred.managed",
  leaseUuid: "fred.lease_uuid",
  tenant: "fred.tenant",
  providerUuid: "fred.provider_uuid",
  sku: "fred.sku",
  createdAt: "fred.created_at",
  serviceName: "fred.service_name",
  instanceIndex: "fred.instance_index",
  backendName: "fred.backend_name",
  storageId: "fred.storage_id",
  operationId: "fred.operation_id",
  release: "fred.release",
  healthGated: "fred.health_gated",
  instanceCount: "fred.instance_count",
} as const;

/** `fred-<lease>-<service>-<i>`: one container (and its volume) per service instance. */
export function instanceName(leaseUuid: string, service: string, index: number): string {
  return `fred-${leaseUuid}-${service}-${index}`;
}

/**
 * The name a release's container is moved to while the next release is created beside it
 * (an update): the next release takes the instance name, the previous one waits here until
 * it is removed, or renamed back if the update is rolled back.
 */
export function asideName(leaseUuid: string, service: string, index: number, release: number): string {
  return `${instanceName(leaseUuid, service, index)}-r${release}`;
}

/** One bridge network per lease: `fred-lease-<lease uuid>`. */
export function leaseNetworkName(leaseUuid: string): string {
  return `fred-lease-${leaseUuid}`;
}

/**
 * The bridge network an earlier version shared among a tenant's leases:
 * `fred-tenant-<first 16 hex of sha256(address)>`. Leases provisioned then still run on it;
 * it is removed with the last of them.
 */
export function legacyTenantNetworkName(tenant: string): string {
  return `fred-tenant-${createHash("sha256").update(tenant).digest("hex").slice(0, 16)}`;
}

/** Log and instance key as the contract shows it: `<service>/<index>`. */
export function instanceKey(service: string, index: number): string {
  return `${service}/${index}`;
}

/**
 * An image VOLUME path as a directory name inside the instance's subvolume: readable,
 * and unique even when two paths flatten to the same text ("/a/b" vs "/a_b").
 */
export function volumeDirName(containerPath: string): string {
  const flat = containerPath.replace(/^\/+|\/+$/g, "").replace(/[^A-Za-z0-9._-]+/g, "_") || "root";
  const tag = createHash("sha256").update(containerPath).digest("hex").slice(0, 8);
  return `${flat.slice(0, 80)}-${tag}`;
}
