/**
 * x/billing state layout. Leases and credit accounts are protobuf values; every listing the
 * queries, withdraw and EndBlock need has its own index so nothing scans all leases:
 *   lease/<uuid>                         Lease
 *   st/<state>/<uuid>                    by state
 *   ten/<tenant>/<state>/<uuid>          by tenant and state
 *   prv/<provider>/<state>/<uuid>        by provider and state (provider-wide withdraw: ACTIVE)
 *   sku/<sku>/<state>/<uuid>             by SKU and state
 *   credit/<tenant>                      CreditAccount
 *   dom/<domain>                         CustomDomainTarget
 *   params, seq/billing
 * Listings without a state filter merge the five per-state indexes. Lease UUIDs are UUIDv7
 * whose first 48 bits are the creation block time, so `st/1/` (PENDING) in UUID order is
 * also oldest-first, which is what EndBlock expiry walks.
 */

import {
  BillingParams,
  CreditAccount,
  CustomDomainTarget,
  Lease,
  LeaseState,
  toBytes,
} from "../../../chain/proto/index.ts";
import type { ExecContext, KVStore, QueryContext } from "../../module.ts";
import { DEFAULT_PARAMS } from "./params.ts";

export const BILLING = "billing";
const EMPTY = new Uint8Array();

export const ALL_STATES = [
  LeaseState.LEASE_STATE_PENDING,
  LeaseState.LEASE_STATE_ACTIVE,
  LeaseState.LEASE_STATE_CLOSED,
  LeaseState.LEASE_STATE_REJECTED,
  LeaseState.LEASE_STATE_EXPIRED,
] as const;

export const bkeys = {
  params: "params",
  lease: (uuid: string) => `lease/${uuid}`,
  byState: (state: number) => `st/${state}/`,
  byTenant: (tenant: string, state: number) => `ten/${tenant}/${state}/`,
  byProvider: (provider: string, state: number) => `prv/${provider}/${state}/`,
  bySku: (sku: string, state: number) => `sku/${sku}/${state}/`,
  allStates: (prefixOf: (state: number) => string) => ALL_STATES.map(prefixOf),
  credit: (tenant: string) => `credit/${tenant}`,
  creditPrefix: "credit/",
  domain: (domain: string) => `dom/${domain}`,
  domainPrefix: "dom/",
};

type Ctx = ExecContext | QueryContext;
const st = (ctx: Ctx) => ctx.store(BILLING);

let paramsCache: { raw: Uint8Array; params: BillingParams } | undefined;

/** Params are read by every Msg; decoding is skipped while the stored bytes are unchanged. */
export function getParams(ctx: Ctx): BillingParams {
  const raw = st(ctx).get(bkeys.params);
  if (raw === undefined) return DEFAULT_PARAMS;
  if (paramsCache !== undefined && Buffer.compare(paramsCache.raw, raw) === 0) return paramsCache.params;
  const params = BillingParams.decode(raw);
  paramsCache = { raw: Uint8Array.from(raw), params };
  return params;
}

export function setParams(ctx: ExecContext, params: BillingParams): void {
  st(ctx).set(bkeys.params, toBytes(BillingParams, params));
}

export function getLease(ctx: Ctx, uuid: string): Lease | undefined {
  const raw = leaseBytes(ctx, uuid);
  return raw === undefined ? undefined : Lease.decode(raw);
}

/** A lease as stored (its binary form), for queries that hand it on unchanged. */
export function leaseBytes(ctx: Ctx, uuid: string): Uint8Array | undefined {
  return st(ctx).get(bkeys.lease(uuid));
}

function indexKeys(lease: Lease): string[] {
  const out = [
    bkeys.byState(lease.state) + lease.uuid,
    bkeys.byTenant(lease.tenant, lease.state) + lease.uuid,
    bkeys.byProvider(lease.providerUuid, lease.state) + lease.uuid,
  ];
  for (const sku of new Set(lease.items.map((i) => i.skuUuid)))
    out.push(bkeys.bySku(sku, lease.state) + lease.uuid);
  return out;
}

/** Writes a lease, moving its index entries when the state changed. */
export function putLease(ctx: ExecContext, lease: Lease, previousState?: number): void {
  const store = st(ctx);
  if (previousState !== undefined && previousState !== lease.state) {
    for (const key of indexKeys({ ...lease, state: previousState })) store.delete(key);
  }
  if (previousState !== lease.state) for (const key of indexKeys(lease)) store.set(key, EMPTY);
  store.set(bkeys.lease(lease.uuid), toBytes(Lease, lease));
}

export function getAccount(ctx: Ctx, tenant: string): CreditAccount | undefined {
  const raw = st(ctx).get(bkeys.credit(tenant));
  return raw === undefined ? undefined : CreditAccount.decode(raw);
}

export function putAccount(ctx: ExecContext, account: CreditAccount): void {
  st(ctx).set(bkeys.credit(account.tenant), toBytes(CreditAccount, account));
}

export function getDomain(ctx: Ctx, domain: string): CustomDomainTarget | undefined {
  const raw = st(ctx).get(bkeys.domain(domain));
  return raw === undefined ? undefined : CustomDomainTarget.decode(raw);
}

export function setDomain(ctx: ExecContext, domain: string, target: CustomDomainTarget): void {
  st(ctx).set(bkeys.domain(domain), toBytes(CustomDomainTarget, target));
}

export function deleteDomain(ctx: ExecContext, domain: string): void {
  st(ctx).delete(bkeys.domain(domain));
}

/** Lease UUIDs under an index prefix, in UUID order. */
export function* uuidsUnder(store: KVStore, prefix: string, start?: string): Generator<string> {
  const range = start === undefined ? { prefix } : { prefix, start: prefix + start };
  for (const [key] of store.iterate(range)) yield key.slice(prefix.length);
}
