/**
 * x/sku Msgs and queries, and the authority-only billing paths (params, leases for tenants,
 * custom domains), on a devnet whose module authority is the `faucet` dev account.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  BillingMsgUpdateParams,
  LeaseState,
  MsgAcknowledgeLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseForTenant,
  MsgCreateLeaseForTenantResponse,
  MsgCreateLeaseResponse,
  MsgCreateProvider,
  MsgCreateProviderResponse,
  MsgCreateSKU,
  MsgCreateSKUResponse,
  MsgDeactivateProvider,
  MsgDeactivateProviderResponse,
  MsgDeactivateSKU,
  MsgSetItemCustomDomain,
  MsgUpdateProvider,
  MsgUpdateSKU,
  QueryLeaseByCustomDomainRequest,
  QueryLeaseByCustomDomainResponse,
  QueryLeasesBySKURequest,
  QueryLeasesBySKUResponse,
  QueryProviderByAddressRequest,
  QueryProviderByAddressResponse,
  QueryProviderRequest,
  QueryProviderResponse,
  QuerySKUsByProviderRequest,
  QuerySKUsByProviderResponse,
  Unit,
} from "../../../src/chain/proto/index.ts";
import { DEFAULT_PARAMS } from "../../../src/devnet/modules/billing/params.ts";
import { type Chain, eventsOf, getLease, msg, startChain } from "./harness.ts";

let chain: Chain;
let admin: string;
let t1: string;
const dec = new TextDecoder();

before(async () => {
  chain = await startChain({ authority: "faucet" });
  admin = chain.address("faucet");
  t1 = chain.address("tenant1");
});
after(() => chain.stop());

const page = (limit: bigint, key: Uint8Array = new Uint8Array()) => ({
  key,
  offset: 0n,
  limit,
  countTotal: false,
  reverse: false,
});

describe("x/sku", () => {
  let p2 = "";
  let skus: string[] = [];

  it("lets only the authority manage providers and SKUs (code 3 otherwise)", async () => {
    const res = await chain.send("tenant1", [
      msg(MsgCreateProvider, { authority: t1, address: t1, payoutAddress: t1 }),
    ]);
    assert.equal(res.code, 3);
    assert.equal((await chain.txResult(res.transactionHash)).codespace, "sku");
  });

  it("creates a provider and SKUs with the documented events and price rule", async () => {
    const tenant2 = chain.address("tenant2");
    const bad = await chain.send("faucet", [
      msg(MsgCreateProvider, {
        authority: admin,
        address: tenant2,
        payoutAddress: tenant2,
        apiUrl: "http://x.example",
      }),
    ]);
    assert.equal(bad.code, 5, "api_url must be https");
    const res = await chain.send("faucet", [
      msg(MsgCreateProvider, {
        authority: admin,
        address: tenant2,
        payoutAddress: tenant2,
        apiUrl: "https://p2.example",
      }),
    ]);
    assert.equal(res.code, 0, res.rawLog);
    p2 = MsgCreateProviderResponse.decode(res.msgResponses[0]!.value).uuid;
    assert.deepEqual(eventsOf(res, "provider_created"), [
      { provider_uuid: p2, address: tenant2, payout_address: tenant2, created_by: admin, msg_index: "0" },
    ]);

    const notDivisible = await chain.send("faucet", [
      msg(MsgCreateSKU, {
        authority: admin,
        providerUuid: p2,
        name: "odd",
        unit: Unit.UNIT_PER_HOUR,
        basePrice: { denom: "upwr", amount: "3601" },
      }),
    ]);
    assert.equal(notDivisible.code, 1);
    const unknown = await chain.send("faucet", [
      msg(MsgCreateSKU, {
        authority: admin,
        providerUuid: "01a22a20-38ff-7000-9a8b-43bc8a5978a3",
        name: "x",
        unit: Unit.UNIT_PER_DAY,
        basePrice: { denom: "upwr", amount: "86400" },
      }),
    ]);
    assert.equal(unknown.code, 6);
    for (const name of ["p2-a", "p2-b", "p2-c"]) {
      const r = await chain.send("faucet", [
        msg(MsgCreateSKU, {
          authority: admin,
          providerUuid: p2,
          name,
          unit: Unit.UNIT_PER_DAY,
          basePrice: { denom: "upwr", amount: "8640000" },
        }),
      ]);
      assert.equal(r.code, 0, r.rawLog);
      const uuid = MsgCreateSKUResponse.decode(r.msgResponses[0]!.value).uuid;
      skus.push(uuid);
      assert.deepEqual(eventsOf(r, "sku_created"), [
        {
          sku_uuid: uuid,
          provider_uuid: p2,
          name,
          base_price: "8640000upwr",
          created_by: admin,
          msg_index: "0",
        },
      ]);
    }
    skus = skus.sort();
    const q = await chain.abci(
      "/liftedinit.sku.v1.Query/SKUsByProvider",
      QuerySKUsByProviderRequest,
      { providerUuid: p2, pagination: page(2n), activeOnly: true },
      QuerySKUsByProviderResponse,
    );
    assert.deepEqual(
      q.skus.map((s) => s.uuid),
      skus.slice(0, 2),
    );
    assert.equal(dec.decode(q.pagination!.nextKey), skus[2]);
    const byAddr = await chain.abci(
      "/liftedinit.sku.v1.Query/ProviderByAddress",
      QueryProviderByAddressRequest,
      { address: tenant2, pagination: undefined, activeOnly: false },
      QueryProviderByAddressResponse,
    );
    assert.deepEqual(
      byAddr.providers.map((p) => p.uuid),
      [p2],
    );
    await assert.rejects(
      chain.abci(
        "/liftedinit.sku.v1.Query/Provider",
        QueryProviderRequest,
        { uuid: "01a22a20-38ff-7000-9a8b-43bc8a5978a3" },
        QueryProviderResponse,
      ),
      /NotFound/,
    );
  });

  it("refuses mixed providers, inactive SKUs and inactive providers in new leases, keeping old leases", async () => {
    const small = chain.devnet.keys.skus[0]!.uuid;
    const item = (skuUuid: string) => ({ skuUuid, quantity: 1n, serviceName: "" });
    const mixed = await chain.send("tenant1", [
      msg(MsgCreateLease, { tenant: t1, items: [item(small), item(skus[0]!)] }),
    ]);
    assert.equal(mixed.code, 14);
    const ok = await chain.send("tenant1", [msg(MsgCreateLease, { tenant: t1, items: [item(skus[0]!)] })]);
    assert.equal(ok.code, 0, ok.rawLog);
    const leaseUuid = MsgCreateLeaseResponse.decode(ok.msgResponses[0]!.value).leaseUuid;
    // 8 640 000 upwr/day → 100 upwr/s locked
    assert.deepEqual((await getLease(chain, leaseUuid)).items[0]!.lockedPrice, {
      denom: "upwr",
      amount: "100",
    });

    const d = await chain.send("faucet", [msg(MsgDeactivateSKU, { authority: admin, uuid: skus[0]! })]);
    assert.equal(d.code, 0, d.rawLog);
    assert.deepEqual(eventsOf(d, "sku_deactivated"), [
      { sku_uuid: skus[0], provider_uuid: p2, deactivated_by: admin, msg_index: "0" },
    ]);
    assert.equal(
      (await chain.send("tenant1", [msg(MsgCreateLease, { tenant: t1, items: [item(skus[0]!)] })])).code,
      11,
    );
    const off = await chain.send("faucet", [
      msg(MsgUpdateSKU, {
        authority: admin,
        uuid: skus[1]!,
        providerUuid: p2,
        name: "p2-b",
        unit: Unit.UNIT_PER_DAY,
        basePrice: { denom: "upwr", amount: "8640000" },
        active: false,
      }),
    ]);
    assert.equal(off.code, 1, "deactivating through update is refused");

    const dp = await chain.send("faucet", [
      msg(MsgDeactivateProvider, { authority: admin, uuid: p2, limit: 1n }),
    ]);
    assert.equal(dp.code, 0, dp.rawLog);
    assert.deepEqual(MsgDeactivateProviderResponse.decode(dp.msgResponses[0]!.value), {
      deactivatedSkuCount: 1n,
      hasMore: true,
    });
    assert.equal(eventsOf(dp, "provider_deactivated").length, 1);
    const dp2 = await chain.send("faucet", [
      msg(MsgDeactivateProvider, { authority: admin, uuid: p2, limit: 5n }),
    ]);
    assert.deepEqual(MsgDeactivateProviderResponse.decode(dp2.msgResponses[0]!.value), {
      deactivatedSkuCount: 1n,
      hasMore: false,
    });
    assert.equal(
      (await chain.send("faucet", [msg(MsgDeactivateProvider, { authority: admin, uuid: p2 })])).code,
      5,
    );
    assert.equal(
      (await chain.send("faucet", [msg(MsgDeactivateProvider, { authority: admin, uuid: p2, limit: 101n })]))
        .code,
      5,
    );

    // the existing PENDING lease can still be acknowledged by the (inactive) provider's address
    const ack = await chain.send("tenant2", [
      msg(MsgAcknowledgeLease, { sender: chain.address("tenant2"), leaseUuids: [leaseUuid] }),
    ]);
    assert.equal(ack.code, 0, ack.rawLog);
    const bySku = await chain.abci(
      "/liftedinit.billing.v1.Query/LeasesBySKU",
      QueryLeasesBySKURequest,
      { skuUuid: skus[0]!, pagination: undefined, stateFilter: LeaseState.LEASE_STATE_ACTIVE },
      QueryLeasesBySKUResponse,
    );
    assert.deepEqual(
      bySku.leases.map((l) => l.uuid),
      [leaseUuid],
    );

    const re = await chain.send("faucet", [
      msg(MsgUpdateProvider, {
        authority: admin,
        uuid: p2,
        address: chain.address("tenant2"),
        payoutAddress: chain.address("tenant2"),
        active: true,
      }),
    ]);
    assert.equal(re.code, 0, re.rawLog);
    assert.deepEqual(
      re.events.filter((e) => e.type.startsWith("provider_")).map((e) => e.type),
      ["provider_activated", "provider_updated"],
    );
    const prov = await chain.abci(
      "/liftedinit.sku.v1.Query/Provider",
      QueryProviderRequest,
      { uuid: p2 },
      QueryProviderResponse,
    );
    assert.equal(prov.provider?.apiUrl, "https://p2.example", "empty api_url keeps the stored one");
    await chain.assertInvariants();
  });
});

describe("authority paths of x/billing", () => {
  it("creates leases for tenants as authority or allowed, and updates params only as authority", async () => {
    const small = chain.devnet.keys.skus[0]!.uuid;
    const items = [{ skuUuid: small, quantity: 1n, serviceName: "" }];
    const res = await chain.send("faucet", [
      msg(MsgCreateLeaseForTenant, { authority: admin, tenant: t1, items }),
    ]);
    assert.equal(res.code, 0, res.rawLog);
    const ev = eventsOf(res, "lease_created")[0]!;
    assert.deepEqual([ev.created_by, ev.sender, ev.tenant], ["authority", admin, t1]);
    assert.ok(MsgCreateLeaseForTenantResponse.decode(res.msgResponses[0]!.value).leaseUuid);

    const t3 = chain.address("tenant2");
    const params = await chain.send("faucet", [
      msg(BillingMsgUpdateParams, {
        authority: admin,
        params: { ...DEFAULT_PARAMS, allowedList: [t3], reservedDomainSuffixes: [".fred.internal"] },
      }),
    ]);
    assert.equal(params.code, 0, params.rawLog);
    assert.equal(eventsOf(params, "params_updated").length, 1);
    const allowed = await chain.send("tenant2", [
      msg(MsgCreateLeaseForTenant, { authority: t3, tenant: t1, items }),
    ]);
    assert.equal(allowed.code, 0, allowed.rawLog);
    assert.equal(eventsOf(allowed, "lease_created")[0]!.created_by, "allowed");
    await chain.assertInvariants();
  });

  it("closes as authority (overriding other roles) and refuses a batch mixing roles", async () => {
    const small = chain.devnet.keys.skus[0]!.uuid;
    const provider = chain.address("provider");
    const create = (tenant: string) =>
      msg(MsgCreateLease, {
        tenant: chain.address(tenant),
        items: [{ skuUuid: small, quantity: 1n, serviceName: "" }],
      });
    const a = await chain.send("tenant1", [create("tenant1"), create("tenant1")], {
      amount: [{ denom: "umfx", amount: "40000" }],
      gas: "800000",
    });
    const b = await chain.send("tenant2", [create("tenant2")]);
    const [l1, l2] = a.msgResponses.map((r) => MsgCreateLeaseResponse.decode(r.value).leaseUuid);
    const l3 = MsgCreateLeaseResponse.decode(b.msgResponses[0]!.value).leaseUuid;
    assert.equal(
      (
        await chain.send("provider", [
          msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [l1!, l2!, l3] }),
        ])
      ).code,
      0,
    );
    // tenant1 may close its own lease but not tenant2's: one batch, two roles → code 6
    const mixed = await chain.send("tenant1", [msg(MsgCloseLease, { sender: t1, leaseUuids: [l1!, l3] })]);
    assert.equal(mixed.code, 6);
    const byAuthority = await chain.send("faucet", [
      msg(MsgCloseLease, { sender: admin, leaseUuids: [l1!, l3], reason: "policy" }),
    ]);
    assert.equal(byAuthority.code, 0, byAuthority.rawLog);
    assert.deepEqual(
      eventsOf(byAuthority, "lease_closed").map((e) => e.closed_by),
      ["authority", "authority"],
    );
    assert.equal(eventsOf(byAuthority, "batch_closed")[0]!.closed_by, "authority");
    const stranger = await chain.send("tenant2", [
      msg(MsgCloseLease, { sender: chain.address("tenant2"), leaseUuids: [l2!] }),
    ]);
    assert.equal(stranger.code, 6);
  });

  it("sets, refuses and clears custom domains with a global claim index", async () => {
    const small = chain.devnet.keys.skus[0]!.uuid;
    const medium = chain.devnet.keys.skus[1]!.uuid;
    const create = await chain.send("tenant1", [
      msg(MsgCreateLease, {
        tenant: t1,
        items: [
          { skuUuid: small, quantity: 1n, serviceName: "web" },
          { skuUuid: medium, quantity: 1n, serviceName: "db" },
        ],
      }),
    ]);
    assert.equal(create.code, 0, create.rawLog);
    const lease = MsgCreateLeaseResponse.decode(create.msgResponses[0]!.value).leaseUuid;
    const set = (sender: string, serviceName: string, customDomain: string, signer = "tenant1") =>
      chain.send(signer, [
        msg(MsgSetItemCustomDomain, { sender, leaseUuid: lease, serviceName, customDomain }),
      ]);

    const ok = await set(t1, "web", "shop.example.com");
    assert.equal(ok.code, 0, ok.rawLog);
    assert.deepEqual(eventsOf(ok, "lease_custom_domain_set")[0], {
      lease_uuid: lease,
      tenant: t1,
      service_name: "web",
      custom_domain: "shop.example.com",
      set_by: "tenant",
      provider_uuid: chain.devnet.keys.provider_uuid,
      msg_index: "0",
    });
    const found = await chain.abci(
      "/liftedinit.billing.v1.Query/LeaseByCustomDomain",
      QueryLeaseByCustomDomainRequest,
      { customDomain: " SHOP.example.com " },
      QueryLeaseByCustomDomainResponse,
    );
    assert.deepEqual([found.lease?.uuid, found.serviceName], [lease, "web"]);
    assert.equal((await set(t1, "db", "shop.example.com")).code, 30, "claimed by another item");
    assert.equal((await set(t1, "db", "api.fred.internal")).code, 29, "reserved suffix");
    assert.equal((await set(t1, "cache", "c.example.com")).code, 32, "no such service");
    assert.equal(
      (await set(chain.address("tenant2"), "db", "x.example.com", "tenant2")).code,
      0,
      "allowed list member",
    );
    const again = await set(t1, "web", "shop.example.com");
    assert.deepEqual(
      [again.code, eventsOf(again, "lease_custom_domain_set").length],
      [0, 0],
      "idempotent no-op",
    );
    const cleared = await set(t1, "web", "");
    assert.equal(eventsOf(cleared, "lease_custom_domain_cleared")[0]!.custom_domain, "shop.example.com");
    await assert.rejects(
      chain.abci(
        "/liftedinit.billing.v1.Query/LeaseByCustomDomain",
        QueryLeaseByCustomDomainRequest,
        { customDomain: "shop.example.com" },
        QueryLeaseByCustomDomainResponse,
      ),
      /NotFound/,
    );
    await chain.assertInvariants();
  });
});
