/** x/billing gRPC queries (path /liftedinit.billing.v1.Query/<Method>), newer-line semantics. */
import {
  BillingQueryParamsResponse,
  CreditAccount,
  LeaseState,
  QueryCreditAccountRequest,
  QueryCreditAccountResponse,
  QueryCreditAccountsRequest,
  QueryCreditAccountsResponse,
  QueryCreditAddressRequest,
  QueryCreditAddressResponse,
  QueryCreditEstimateRequest,
  QueryCreditEstimateResponse,
  QueryLeaseByCustomDomainRequest,
  QueryLeaseByCustomDomainResponse,
  QueryLeaseRequest,
  QueryLeaseResponse,
  QueryLeasesByProviderRequest,
  QueryLeasesByProviderResponse,
  QueryLeasesBySKURequest,
  QueryLeasesBySKUResponse,
  QueryLeasesByTenantRequest,
  QueryLeasesByTenantResponse,
  QueryLeasesRequest,
  QueryLeasesResponse,
  QueryWithdrawableAmountRequest,
  QueryWithdrawableAmountResponse,
  toBytes,
  toBytesWithEncoded,
} from "../../../chain/proto/index.ts";
import { addAll, amountIn, type Coins, coinsFromProto, coinsToProto, sortedDenoms } from "../../coins.ts";
import { deriveCreditAddress } from "../../economics/credit-address.ts";
import { leaseRate, withdrawable } from "../../economics/settlement.ts";
import { isUuidV7 } from "../../economics/uuidv7.ts";
import type { QueryContext, QueryHandler } from "../../module.ts";
import { grpcError, paginate, requireNonEmpty } from "../../query-kit.ts";
import { addressProblem } from "../sku/validate.ts";
import { type BillingDeps, balanceOf, nowNs, trancheOf, tsNs } from "./ledger.ts";
import { providerWithdrawableQuery } from "./query-withdrawable.ts";
import { BILLING, bkeys, getAccount, getDomain, getLease, getParams, leaseBytes } from "./store.ts";

const Q = "/liftedinit.billing.v1.Query/";
const MAX_ESTIMATE_LEASES = 11_000;
const MAX_ESTIMATE_ITEMS = 100_000;
const MAX_UINT64 = (1n << 64n) - 1n;

export function billingQueries(deps: BillingDeps): Record<string, QueryHandler> {
  const store = (ctx: QueryContext) => ctx.store(BILLING);
  // Lease lists hand each stored lease on as its bytes (toBytesWithEncoded): no decode and re-encode.
  const leaseAt = (ctx: QueryContext) => (uuid: string) => leaseBytes(ctx, uuid);
  const tenantArg = (tenant: string) => {
    requireNonEmpty(tenant, "tenant");
    const problem = addressProblem(tenant, deps.prefix);
    if (problem !== undefined) throw grpcError("InvalidArgument", `invalid tenant address: ${problem}`);
    return tenant.toLowerCase();
  };
  const uuidArg = (uuid: string, what: string) => {
    requireNonEmpty(uuid, what);
    if (!isUuidV7(uuid)) throw grpcError("InvalidArgument", `invalid ${what}: ${uuid}`);
    return uuid;
  };
  const stateArg = (state: number) => {
    if (state < 0 || state > LeaseState.LEASE_STATE_EXPIRED)
      throw grpcError("InvalidArgument", `invalid state filter ${state}`);
    return state;
  };
  const filtered = (
    ctx: QueryContext,
    byState: (s: number) => string,
    state: number,
    req: Parameters<typeof paginate>[2],
  ) =>
    paginate(
      store(ctx),
      stateArg(state) === 0 ? bkeys.allStates(byState) : byState(state),
      req,
      leaseAt(ctx),
    );

  return {
    [`${Q}Params`]: (ctx) => toBytes(BillingQueryParamsResponse, { params: getParams(ctx) }),
    [`${Q}Lease`](ctx, bytes) {
      const req = QueryLeaseRequest.decode(bytes);
      requireNonEmpty(req.leaseUuid, "lease_uuid");
      const lease = getLease(ctx, req.leaseUuid);
      if (lease === undefined) throw grpcError("NotFound", `lease ${req.leaseUuid} not found`);
      return toBytes(QueryLeaseResponse, { lease });
    },
    [`${Q}Leases`](ctx, bytes) {
      const req = QueryLeasesRequest.decode(bytes);
      const page =
        stateArg(req.stateFilter) === 0
          ? paginate(store(ctx), "lease/", req.pagination, (_k, v) => v)
          : paginate(store(ctx), bkeys.byState(req.stateFilter), req.pagination, leaseAt(ctx));
      return toBytesWithEncoded(QueryLeasesResponse, { pagination: page.pagination }, "leases", page.items);
    },
    [`${Q}LeasesByTenant`](ctx, bytes) {
      const req = QueryLeasesByTenantRequest.decode(bytes);
      const t = tenantArg(req.tenant);
      const page = filtered(ctx, (s) => bkeys.byTenant(t, s), req.stateFilter, req.pagination);
      return toBytesWithEncoded(
        QueryLeasesByTenantResponse,
        { pagination: page.pagination },
        "leases",
        page.items,
      );
    },
    [`${Q}LeasesByProvider`](ctx, bytes) {
      const req = QueryLeasesByProviderRequest.decode(bytes);
      const p = uuidArg(req.providerUuid, "provider_uuid");
      const page = filtered(ctx, (s) => bkeys.byProvider(p, s), req.stateFilter, req.pagination);
      return toBytesWithEncoded(
        QueryLeasesByProviderResponse,
        { pagination: page.pagination },
        "leases",
        page.items,
      );
    },
    [`${Q}LeasesBySKU`](ctx, bytes) {
      const req = QueryLeasesBySKURequest.decode(bytes);
      const s = uuidArg(req.skuUuid, "sku_uuid");
      const page = filtered(ctx, (st) => bkeys.bySku(s, st), req.stateFilter, req.pagination);
      return toBytesWithEncoded(
        QueryLeasesBySKUResponse,
        { pagination: page.pagination },
        "leases",
        page.items,
      );
    },
    [`${Q}CreditAccount`](ctx, bytes) {
      const req = QueryCreditAccountRequest.decode(bytes);
      const tenant = tenantArg(req.tenant);
      const account = getAccount(ctx, tenant);
      if (account === undefined) throw grpcError("NotFound", `credit account for ${tenant} not found`);
      const all = deps.bank.getAllBalances(ctx, account.creditAddress);
      const from = req.pagination?.key.length ? new TextDecoder().decode(req.pagination.key) : "";
      if (req.pagination !== undefined && (req.pagination.offset > 0n || req.pagination.countTotal))
        throw grpcError("InvalidArgument", "offset and count_total are not supported; use key");
      let limit = Number(req.pagination?.limit ?? 0n) || 100;
      if (limit > 1000) limit = 1000;
      const rest = all.filter((c) => c.denom >= from);
      const balances = rest.slice(0, limit);
      const reserved = coinsFromProto(account.reservedAmounts);
      const available = balances
        .map((c) => ({ denom: c.denom, amount: (BigInt(c.amount) - amountIn(reserved, c.denom)).toString() }))
        .filter((c) => BigInt(c.amount) > 0n);
      const nextKey = rest.length > limit ? new TextEncoder().encode(rest[limit]!.denom) : new Uint8Array();
      return toBytes(QueryCreditAccountResponse, {
        creditAccount: account,
        balances,
        availableBalances: available,
        pagination: { nextKey, total: 0n },
      });
    },
    [`${Q}CreditAddress`](_ctx, bytes) {
      const req = QueryCreditAddressRequest.decode(bytes);
      return toBytes(QueryCreditAddressResponse, {
        creditAddress: deriveCreditAddress(tenantArg(req.tenant)),
      });
    },
    [`${Q}WithdrawableAmount`](ctx, bytes) {
      const req = QueryWithdrawableAmountRequest.decode(bytes);
      requireNonEmpty(req.leaseUuid, "lease_uuid");
      const lease = getLease(ctx, req.leaseUuid);
      if (lease === undefined) throw grpcError("NotFound", `lease ${req.leaseUuid} not found`);
      if (lease.state !== LeaseState.LEASE_STATE_ACTIVE)
        return toBytes(QueryWithdrawableAmountResponse, { amounts: [] });
      const account = getAccount(ctx, lease.tenant);
      if (account === undefined) return toBytes(QueryWithdrawableAmountResponse, { amounts: [] });
      const rate = leaseRate(lease.items);
      const amounts = withdrawable({
        rate,
        lastSettledNs: tsNs(lease.lastSettledAt),
        toNs: nowNs(ctx),
        balance: balanceOf(ctx, deps.bank, account.creditAddress, rate.keys()),
        reserved: coinsFromProto(account.reservedAmounts),
        tranche: trancheOf(lease),
      });
      return toBytes(QueryWithdrawableAmountResponse, { amounts: coinsToProto(amounts) });
    },
    [`${Q}ProviderWithdrawable`]: providerWithdrawableQuery(deps),
    [`${Q}CreditAccounts`](ctx, bytes) {
      const req = QueryCreditAccountsRequest.decode(bytes);
      const page = paginate(store(ctx), bkeys.creditPrefix, req.pagination, (_k, v) =>
        CreditAccount.decode(v),
      );
      return toBytes(QueryCreditAccountsResponse, {
        creditAccounts: page.items,
        pagination: page.pagination,
      });
    },
    [`${Q}CreditEstimate`](ctx, bytes) {
      const req = QueryCreditEstimateRequest.decode(bytes);
      const tenant = tenantArg(req.tenant);
      const account = getAccount(ctx, tenant);
      if (account === undefined) throw grpcError("NotFound", `credit account for ${tenant} not found`);
      if (account.activeLeaseCount > BigInt(MAX_ESTIMATE_LEASES))
        throw grpcError("ResourceExhausted", `more than ${MAX_ESTIMATE_LEASES} active leases`);
      const rate: Coins = new Map();
      let items = 0;
      let active = 0n;
      const prefix = bkeys.byTenant(tenant, LeaseState.LEASE_STATE_ACTIVE);
      for (const [key] of store(ctx).iterate({ prefix })) {
        if (active >= account.activeLeaseCount) break;
        active++;
        const lease = getLease(ctx, key.slice(prefix.length))!;
        items += lease.items.length;
        if (items > MAX_ESTIMATE_ITEMS)
          throw grpcError("ResourceExhausted", `more than ${MAX_ESTIMATE_ITEMS} items`);
        addAll(rate, leaseRate(lease.items));
      }
      // As the chain: balances only for the denoms the ACTIVE leases burn, and a runway of 0
      // (not "forever") unless something is burning; any burnt denom at zero means 0.
      const balance = balanceOf(ctx, deps.bank, account.creditAddress, rate.keys());
      let estimate = 0n;
      if (active > 0n && rate.size > 0) {
        estimate = MAX_UINT64;
        for (const denom of sortedDenoms(rate)) {
          const have = amountIn(balance, denom);
          if (have === 0n) {
            estimate = 0n;
            break;
          }
          const secs = have / amountIn(rate, denom);
          if (secs < estimate) estimate = secs;
        }
      }
      return toBytes(QueryCreditEstimateResponse, {
        currentBalance: coinsToProto(balance),
        totalRatePerSecond: coinsToProto(rate),
        estimatedDurationSeconds: estimate,
        activeLeaseCount: active,
      });
    },
    [`${Q}LeaseByCustomDomain`](ctx, bytes) {
      const req = QueryLeaseByCustomDomainRequest.decode(bytes);
      const domain = req.customDomain.trim().toLowerCase();
      requireNonEmpty(domain, "custom_domain");
      const target = getDomain(ctx, domain);
      if (target === undefined) throw grpcError("NotFound", `no lease claims ${domain}`);
      return toBytes(QueryLeaseByCustomDomainResponse, {
        lease: getLease(ctx, target.leaseUuid),
        serviceName: target.serviceName,
      });
    },
  };
}
