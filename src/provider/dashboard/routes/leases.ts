import { isAccountAddress } from "../../../auth/address.ts";
import { isCanonicalUuid } from "../../../core/uuid.ts";
import { ApiError } from "../../api/errors.ts";
import { CHAIN_STATES, type LeaseRow } from "../chain-view.ts";
import type { DashboardContext } from "../context.ts";
import { iso, isoOrNull } from "./shapes.ts";

/**
 * `GET /api/leases?q=&state=&backend=&sku=&limit=&cursor=`: the provider's leases from the
 * memoized chain listing (every state), joined with the placement store's records, in UUID
 * order. `q` is a lease UUID (whole or a prefix of it) or a tenant address (whole);
 * `state` a chain state or a record state; `backend` a configured backend; `sku` a SKU
 * UUID; `limit` 1–200 (50); `cursor` the `next_cursor` of the page before. Any other
 * parameter, or a value outside these, is 400.
 */
export const RECORD_STATES = ["confirmed", "conflict", "provisioning"] as const;
type RecordState = (typeof RECORD_STATES)[number];
const PARAMS = new Set(["q", "state", "backend", "sku", "limit", "cursor"]);
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const UUID_PREFIX = /^[0-9a-f]{1,8}(-[0-9a-f]{0,4}){0,3}(-[0-9a-f]{0,12})?$/;

export interface LeaseQuery {
  uuidPrefix?: string;
  tenant?: string;
  state?: string;
  backend?: string;
  sku?: string;
  limit: number;
  after?: string;
}

function badQuery(message: string): ApiError {
  return new ApiError("ERR_API_BAD_QUERY", 400, message);
}

export function parseLeaseQuery(raw: unknown, ctx: DashboardContext): LeaseQuery {
  const query = (raw ?? {}) as Record<string, unknown>;
  const out: LeaseQuery = { limit: DEFAULT_LIMIT };
  for (const [key, value] of Object.entries(query)) {
    if (!PARAMS.has(key)) throw badQuery(`unknown query parameter ${JSON.stringify(key.slice(0, 64))}`);
    if (typeof value !== "string") throw badQuery(`${key} must be given once`);
  }
  const text = (key: string) => query[key] as string | undefined;
  const q = text("q");
  if (q !== undefined) {
    if (UUID_PREFIX.test(q)) out.uuidPrefix = q;
    else if (isAccountAddress(q, ctx.s.config.bech32Prefix)) out.tenant = q;
    else throw badQuery("q must be a lease UUID (or the start of one, lowercase) or a tenant address");
  }
  const state = text("state");
  if (state !== undefined) {
    if (
      !(CHAIN_STATES as readonly string[]).includes(state) &&
      !(RECORD_STATES as readonly string[]).includes(state)
    )
      throw badQuery(`state must be one of ${[...CHAIN_STATES, ...RECORD_STATES].join(", ")}`);
    out.state = state;
  }
  const backend = text("backend");
  if (backend !== undefined) {
    if (!ctx.s.config.backends.some((b) => b.name === backend))
      throw badQuery("backend is not a configured backend");
    out.backend = backend;
  }
  const sku = text("sku");
  if (sku !== undefined) {
    if (!isCanonicalUuid(sku)) throw badQuery("sku must be a SKU UUID");
    out.sku = sku;
  }
  const limit = text("limit");
  if (limit !== undefined) {
    if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_LIMIT)
      throw badQuery(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    out.limit = Number(limit);
  }
  const cursor = text("cursor");
  if (cursor !== undefined) {
    const after = /^[A-Za-z0-9_-]{1,64}$/.test(cursor)
      ? Buffer.from(cursor, "base64url").toString("utf8")
      : "";
    if (!isCanonicalUuid(after)) throw badQuery("cursor is not one this API returned");
    out.after = after;
  }
  return out;
}

export function cursorOf(uuid: string): string {
  return Buffer.from(uuid, "utf8").toString("base64url");
}

export async function leaseList(ctx: DashboardContext, query: LeaseQuery) {
  const listing = await ctx.chain.leases();
  if (!listing.ok)
    throw new ApiError("ERR_API_CHAIN_READ", 503, "the chain did not answer; try again shortly", {
      retryAfterSeconds: 5,
    });
  const tally = await ctx.storeTally();
  const attempts = new Map(ctx.s.store.unresolvedAttempts().map((a) => [a.leaseUuid, a.backend]));
  const recordOf = (uuid: string): { state: RecordState | null; backend: string | null } => {
    const r = tally.records.get(uuid);
    if (r !== undefined) return { state: r.state, backend: r.owner ?? null };
    const attempt = attempts.get(uuid);
    return attempt === undefined
      ? { state: null, backend: null }
      : { state: "provisioning", backend: attempt };
  };
  const matches = (row: LeaseRow): boolean => {
    if (query.after !== undefined && row.uuid <= query.after) return false;
    if (query.uuidPrefix !== undefined && !row.uuid.startsWith(query.uuidPrefix)) return false;
    if (query.tenant !== undefined && row.tenant !== query.tenant) return false;
    if (query.sku !== undefined && row.sku !== query.sku) return false;
    if (query.state === undefined && query.backend === undefined) return true;
    const record = recordOf(row.uuid);
    if (query.backend !== undefined && record.backend !== query.backend) return false;
    return query.state === undefined || row.state === query.state || record.state === query.state;
  };
  const page: LeaseRow[] = [];
  let more = false;
  for (const row of listing.rows) {
    if (!matches(row)) continue;
    if (page.length === query.limit) {
      more = true;
      break;
    }
    page.push(row);
  }
  return {
    leases: page.map((row) => {
      const record = recordOf(row.uuid);
      return {
        uuid: row.uuid,
        tenant: row.tenant,
        state: row.state,
        backend: record.backend,
        sku: row.sku ?? null,
        created_at: isoOrNull(row.createdAtMs),
        record_state: record.state,
      };
    }),
    next_cursor: more ? cursorOf(page.at(-1)!.uuid) : null,
    chain_as_of: iso(listing.asOfMs),
    truncated: listing.truncated,
  };
}
