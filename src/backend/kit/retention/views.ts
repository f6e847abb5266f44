import type { ProvisionInfoBody, RetentionsPageBody } from "../../../core/backend-contract/index.ts";
import { LIMITS, QUERY } from "../../../core/backend-contract/index.ts";
import { isCanonicalUuid } from "../../../core/uuid.ts";
import { badRequest } from "../errors.ts";
import type { RetentionPolicy } from "./policy.ts";
import type { RetentionRow, RetentionStore } from "./store.ts";

/** The retained lease as `GET /provisions/{uuid}` shows it (README seed, "Get Provision"). */
export type RetainedInfoBody = ProvisionInfoBody & {
  restore_hint: string;
  partition?: string;
  retained_until?: string;
};

const HINT =
  "open a new lease with the same services and quantities (any tier the data fits), then restore it from this lease";

export function retainedInfo(row: RetentionRow, policy: RetentionPolicy): RetainedInfoBody {
  const retainedAt = row.retainedAtMs ?? row.closedAtMs;
  const out: RetainedInfoBody = {
    lease_uuid: row.leaseUuid,
    provider_uuid: row.providerUuid,
    tenant: row.tenant,
    status: "retained",
    created_at: new Date(retainedAt).toISOString(),
    quantity: row.items.reduce((n, i) => n + i.quantity, 0),
    items: row.items.map((i) => ({
      service_name: i.service_name ?? "app",
      sku: i.sku,
      quantity: i.quantity,
    })),
    restore_hint: HINT,
  };
  if (row.partition !== "") out.partition = row.partition;
  if (policy.maxAgeMs > 0) out.retained_until = new Date(retainedAt + policy.maxAgeMs).toISOString();
  return out;
}

/** A restorable row (active, or claimed by a restore that has not committed yet). */
export function isListed(row: RetentionRow | undefined): row is RetentionRow {
  return row !== undefined && (row.status === "active" || row.status === "restoring");
}

/** `GET /retentions`, paged like `/provisions` (limit, continue, lease_uuid filters). */
export function retentionsPage(store: RetentionStore, q: Record<string, unknown>): RetentionsPageBody {
  const filter = q[QUERY.leaseUuid];
  if (filter !== undefined) {
    const ids = (Array.isArray(filter) ? filter : [filter]) as unknown[];
    if (ids.length > LIMITS.maxPage) throw badRequest(`at most ${LIMITS.maxPage} lease_uuid filters`);
    for (const id of ids) if (!isCanonicalUuid(id)) throw badRequest("lease_uuid must be a lease UUID");
    const rows = [...new Set(ids as string[])].sort().filter((id) => isListed(store.get(id)));
    return { retentions: rows.map((lease_uuid) => ({ lease_uuid })) };
  }
  let limit = -1;
  const rawLimit = q[QUERY.limit];
  if (rawLimit !== undefined) {
    if (typeof rawLimit !== "string" || !/^\d{1,9}$/.test(rawLimit) || Number(rawLimit) < 1)
      throw badRequest("limit must be a positive integer");
    limit = Math.min(Number(rawLimit), LIMITS.maxPage);
  }
  let after = "";
  const cursor = q[QUERY.continue];
  if (cursor !== undefined) {
    if (limit < 0) throw badRequest("continue requires a positive limit");
    if (!isCanonicalUuid(cursor)) throw badRequest("continue must be a lease UUID");
    after = cursor;
  }
  const rows = store.listed(after, limit);
  const out: RetentionsPageBody = { retentions: rows.map((r) => ({ lease_uuid: r.leaseUuid })) };
  const last = rows[rows.length - 1];
  if (limit > 0 && rows.length === limit && last !== undefined) out.continue = last.leaseUuid;
  return out;
}
