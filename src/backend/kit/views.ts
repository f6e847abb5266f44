import type { ProvisionInfoBody, ReleaseInfoBody, StatsBody } from "../../core/backend-contract/index.ts";
import { versionText } from "../../version.ts";
import type { DiagnosticRecord } from "./journal/diagnostics.ts";
import type { LeaseRecord, ReleaseRecord } from "./journal/journal.ts";
import type { PoolStats } from "./resources.ts";
import { budgetView } from "./terminal-budget.ts";

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
    terminal_budget: budgetView(lease.streak),
  };
  if (lease.image !== "") out.image = lease.image;
  if (lease.items.length === 1 && lease.items[0] !== undefined) out.sku = lease.items[0].sku;
  if (lease.reason !== undefined) out.reason = lease.reason;
  if (lease.message !== undefined) out.message = lease.message;
  return out;
}

/**
 * GET /provisions/{uuid} once the lease is no longer live: its last failure, from the
 * diagnostics table (tenant-safe fields only; no items, image, generation or budget: the
 * streak went with the lease row, and a closed lease has nothing left to close).
 */
export function diagnosticInfo(d: DiagnosticRecord): ProvisionInfoBody {
  return {
    lease_uuid: d.leaseUuid,
    provider_uuid: d.providerUuid,
    tenant: d.tenant,
    status: "failed",
    created_at: new Date(d.createdAtMs).toISOString(),
    fail_count: d.failCount,
    reason: d.reason,
    message: d.message,
  };
}

export function releaseInfo(r: ReleaseRecord): ReleaseInfoBody {
  const out: ReleaseInfoBody = {
    version: r.version,
    image: r.image,
    status: r.status,
    created_at: new Date(r.createdAtMs).toISOString(),
  };
  if (r.manifest !== undefined) out.manifest = r.manifest.toString("base64");
  if (r.images !== undefined) {
    // One service: its pinned reference, beside `image`; a stack (`image` "stack"): per service only.
    const pins = Object.values(r.images);
    if (pins.length === 1 && pins[0] !== undefined) out.image_digest = pins[0];
    out.image_digests = { ...r.images };
  }
  if (r.reason !== undefined) out.reason = r.reason;
  if (r.message !== undefined) out.message = r.message;
  return out;
}

/**
 * GET /stats: the pool's books plus the registry allowlist admission applies, so
 * providerd can tell tenants before they pay which images a backend would run. Without
 * an allowlist the field is null ("any registry"); an empty list admits no image.
 */
/** `GET /stats`: the pool's figures, the registry allowlist and (ours) the backend's version. */
export function statsInfo(pool: PoolStats, allowedRegistries: readonly string[] | undefined): StatsBody {
  return {
    ...pool,
    allowed_registries: allowedRegistries === undefined ? null : [...allowedRegistries],
    version: versionText(),
  };
}
