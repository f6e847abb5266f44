import { LIMITS, QUERY, type UsagePageBody } from "../../../core/backend-contract/index.ts";
import { isCanonicalUuid } from "../../../core/uuid.ts";
import { badRequest } from "../errors.ts";
import type { UsageSampler } from "./sampler.ts";

/**
 * `GET /usage`: one keyset page of every sampled lease's current usage (no history), the
 * batch read behind providerd's `lease_usage_metrics`. Parameters are read as for
 * `GET /provisions`, except that a missing `limit` is the 5000-lease ceiling, so every
 * answer is bounded and `continue` may come without `limit`.
 */
export function usagePage(sampler: UsageSampler, q: Record<string, unknown>): UsagePageBody {
  let limit: number = LIMITS.maxPage;
  const rawLimit = q[QUERY.limit];
  if (rawLimit !== undefined) {
    if (typeof rawLimit !== "string" || !/^\d{1,9}$/.test(rawLimit) || Number(rawLimit) < 1)
      throw badRequest("limit must be a positive integer");
    limit = Math.min(Number(rawLimit), LIMITS.maxPage);
  }
  const cursor = q[QUERY.continue];
  if (cursor !== undefined && (typeof cursor !== "string" || !isCanonicalUuid(cursor)))
    throw badRequest("continue must be a lease UUID");
  const leases = sampler.currentPage(cursor as string | undefined, limit);
  const out: UsagePageBody = { sample_interval_seconds: sampler.sampleIntervalSeconds, leases };
  const last = leases.at(-1);
  if (leases.length === limit && last !== undefined) out.continue = last.lease_uuid;
  return out;
}
