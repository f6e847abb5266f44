/**
 * Devnet genesis as `fred devnet init --profile bench --tenants N` builds it (provider, SKUs,
 * funded credit, params at their caps, keys output), and every billing/sku query's pagination
 * and bad-input answers (InvalidArgument / NotFound / ResourceExhausted-style refusals).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  BillingQueryParamsRequest,
  BillingQueryParamsResponse,
  MsgCreateLease,
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
  QueryLeasesByTenantRequest,
  QueryLeasesByTenantResponse,
  QueryLeasesRequest,
  QueryLeasesResponse,
  QueryProviderWithdrawableRequest,
  QueryProviderWithdrawableResponse,
  QuerySKUsRequest,
  QuerySKUsResponse,
  QueryWithdrawableAmountRequest,
  QueryWithdrawableAmountResponse,
  Unit,
} from "../../../src/chain/proto/index.ts";
import { deriveCreditAddress } from "../../../src/devnet/economics/credit-address.ts";
import { runFred } from "../../support/index.ts";
import { type Chain, getCreditAccount, msg, startChain } from "./harness.ts";

let chain: Chain;
const TENANTS = 3;
const dec = new TextDecoder();
const page = (
  over: Partial<{
    key: Uint8Array;
    offset: bigint;
    limit: bigint;
    countTotal: boolean;
    reverse: boolean;
  }> = {},
) => ({
  key: new Uint8Array(),
  offset: 0n,
  limit: 0n,
  countTotal: false,
  reverse: false,
  ...over,
});

before(async () => {
  chain = await startChain({ args: ["--profile", "bench", "--tenants", String(TENANTS)] });
});
after(() => chain.stop());

describe("devnet genesis", () => {
  it("prints provider_uuid and the four SKUs from fred devnet keys while the node runs", async () => {
    const out = await runFred(["devnet", "keys", "--home", chain.devnet.home]);
    assert.equal(out.code, 0, out.stderr);
    const keys = JSON.parse(out.stdout) as typeof chain.devnet.keys;
    assert.match(keys.provider_uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual(
      keys.skus.map((s) => [s.name, s.billing_only]),
      [
        ["docker-small", false],
        ["docker-medium", false],
        ["docker-large", false],
        ["billing-only", true],
      ],
    );
    const skus = await chain.abci(
      "/liftedinit.sku.v1.Query/SKUs",
      QuerySKUsRequest,
      { pagination: undefined, activeOnly: true },
      QuerySKUsResponse,
    );
    assert.deepEqual(skus.skus.map((s) => s.uuid).sort(), keys.skus.map((s) => s.uuid).sort());
    for (const s of skus.skus) {
      assert.equal(s.providerUuid, keys.provider_uuid);
      assert.equal(s.unit, Unit.UNIT_PER_HOUR);
      assert.equal(BigInt(s.basePrice!.amount) % 3600n, 0n);
    }
  });

  it("raises the count limits to their caps with --profile bench and funds every tenant's credit", async () => {
    const { params } = await chain.abci(
      "/liftedinit.billing.v1.Query/Params",
      BillingQueryParamsRequest,
      {},
      BillingQueryParamsResponse,
    );
    assert.equal(params?.maxLeasesPerTenant, 10_000n);
    assert.equal(params?.maxPendingLeasesPerTenant, 1000n);
    assert.equal(params?.maxItemsPerLease, 100n);
    const all = await chain.abci(
      "/liftedinit.billing.v1.Query/CreditAccounts",
      QueryCreditAccountsRequest,
      { pagination: page({ countTotal: true }) },
      QueryCreditAccountsResponse,
    );
    assert.equal(all.creditAccounts.length, TENANTS);
    assert.equal(all.pagination?.total, BigInt(TENANTS));
    for (let i = 1; i <= TENANTS; i++) {
      const t = chain.address(`tenant${i}`);
      const credit = await getCreditAccount(chain, t);
      assert.equal(credit.creditAccount?.creditAddress, deriveCreditAddress(t));
      assert.deepEqual(credit.balances, [{ denom: "upwr", amount: "1000000000" }]);
    }
    await chain.assertInvariants();
  });
});

describe("billing queries", () => {
  let leases: string[] = [];
  before(async () => {
    const t1 = chain.address("tenant1");
    const small = chain.devnet.keys.skus[0]!.uuid;
    const m = () =>
      msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity: 1n, serviceName: "" }] });
    const res = await chain.send("tenant1", [m(), m(), m()], {
      amount: [{ denom: "umfx", amount: "50000" }],
      gas: "1200000",
    });
    assert.equal(res.code, 0, res.rawLog);
    leases = (await chain.snapshot()).leases.map((l) => l.uuid).sort();
  });

  it("pages leases with inclusive next_key, offsets, totals and reverse order", async () => {
    const t1 = chain.address("tenant1");
    const byTenant = (p: ReturnType<typeof page>, stateFilter = 0) =>
      chain.abci(
        "/liftedinit.billing.v1.Query/LeasesByTenant",
        QueryLeasesByTenantRequest,
        { tenant: t1, pagination: p, stateFilter },
        QueryLeasesByTenantResponse,
      );
    const first = await byTenant(page({ limit: 2n }));
    assert.deepEqual(
      first.leases.map((l) => l.uuid),
      leases.slice(0, 2),
    );
    assert.equal(dec.decode(first.pagination!.nextKey), leases[2]);
    const second = await byTenant(page({ limit: 2n, key: first.pagination!.nextKey }));
    assert.deepEqual(
      second.leases.map((l) => l.uuid),
      [leases[2]],
    );
    assert.equal(second.pagination!.nextKey.length, 0);
    const offset = await byTenant(page({ offset: 1n, countTotal: true }));
    assert.deepEqual([offset.leases.length, offset.pagination?.total], [2, 3n]);
    const rev = await byTenant(page({ reverse: true, limit: 1n }));
    assert.deepEqual(
      rev.leases.map((l) => l.uuid),
      [leases[2]],
    );
    assert.equal((await byTenant(page(), 2)).leases.length, 0, "no ACTIVE leases yet");
    const all = await chain.abci(
      "/liftedinit.billing.v1.Query/Leases",
      QueryLeasesRequest,
      { pagination: page({ limit: 5000n }), stateFilter: 1 },
      QueryLeasesResponse,
    );
    assert.equal(all.leases.length, 3, "limit above 1000 is capped, not refused");
  });

  it("answers bad input with InvalidArgument and missing records with NotFound", async () => {
    const unknownV7 = "01a22a20-38ff-7000-9a8b-43bc8a5978a3";
    const refuses = (p: Promise<unknown>, re: RegExp) => assert.rejects(p, re);
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/Lease",
        QueryLeaseRequest,
        { leaseUuid: "" },
        QueryLeaseResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/Lease",
        QueryLeaseRequest,
        { leaseUuid: unknownV7 },
        QueryLeaseResponse,
      ),
      /NotFound/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/LeasesByTenant",
        QueryLeasesByTenantRequest,
        { tenant: "manifest1bad", pagination: undefined, stateFilter: 0 },
        QueryLeasesByTenantResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/LeasesByProvider",
        QueryLeasesByProviderRequest,
        { providerUuid: "not-a-uuid", pagination: undefined, stateFilter: 0 },
        QueryLeasesByProviderResponse,
      ),
      /InvalidArgument/,
    );
    const empty = await chain.abci(
      "/liftedinit.billing.v1.Query/LeasesByProvider",
      QueryLeasesByProviderRequest,
      { providerUuid: unknownV7, pagination: undefined, stateFilter: 0 },
      QueryLeasesByProviderResponse,
    );
    assert.deepEqual(empty.leases, [], "unknown provider: empty page");
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/Leases",
        QueryLeasesRequest,
        { pagination: page({ key: new Uint8Array([1]), offset: 1n }), stateFilter: 0 },
        QueryLeasesResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/Leases",
        QueryLeasesRequest,
        { pagination: undefined, stateFilter: 9 },
        QueryLeasesResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/CreditEstimate",
        QueryCreditEstimateRequest,
        { tenant: chain.address("faucet") },
        QueryCreditEstimateResponse,
      ),
      /NotFound/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/ProviderWithdrawable",
        QueryProviderWithdrawableRequest,
        { providerUuid: chain.devnet.keys.provider_uuid, pagination: page({ offset: 2n }) },
        QueryProviderWithdrawableResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/LeaseByCustomDomain",
        QueryLeaseByCustomDomainRequest,
        { customDomain: "  " },
        QueryLeaseByCustomDomainResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(
      chain.abci(
        "/liftedinit.billing.v1.Query/CreditAddress",
        QueryCreditAddressRequest,
        { tenant: "cosmos1xyz" },
        QueryCreditAddressResponse,
      ),
      /InvalidArgument/,
    );
    await refuses(chain.query.authz.grants("manifest1bad", chain.address("tenant1"), ""), /InvalidArgument/);
  });

  it("derives credit addresses, estimates runway and reports nothing withdrawable for PENDING leases", async () => {
    const t2 = chain.address("tenant2");
    const addr = await chain.abci(
      "/liftedinit.billing.v1.Query/CreditAddress",
      QueryCreditAddressRequest,
      { tenant: t2 },
      QueryCreditAddressResponse,
    );
    assert.equal(addr.creditAddress, deriveCreditAddress(t2));
    const est = await chain.abci(
      "/liftedinit.billing.v1.Query/CreditEstimate",
      QueryCreditEstimateRequest,
      { tenant: chain.address("tenant1") },
      QueryCreditEstimateResponse,
    );
    assert.deepEqual(est.totalRatePerSecond, [], "no ACTIVE leases");
    assert.equal(est.activeLeaseCount, 0n);
    assert.equal(est.estimatedDurationSeconds, 0n, "no burn rate: no runway, as on the chain");
    assert.deepEqual(est.currentBalance, [], "only the denoms of ACTIVE leases are reported");
    const w = await chain.abci(
      "/liftedinit.billing.v1.Query/WithdrawableAmount",
      QueryWithdrawableAmountRequest,
      { leaseUuid: leases[0]! },
      QueryWithdrawableAmountResponse,
    );
    assert.deepEqual(w.amounts, []);
  });
});
