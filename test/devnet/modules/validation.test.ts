/**
 * Bad input for every billing/authz Msg: stateless violations are refused at CheckTx
 * (broadcast_tx_sync) with the registered codespace and code; state violations fail in the
 * block. Either way the ledger is unchanged.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { EncodeObject } from "@cosmjs/proto-signing";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { MsgGrant } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import {
  BillingMsgUpdateParams,
  MsgAcknowledgeLease,
  MsgCancelLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseForTenant,
  MsgFundCredit,
  MsgRejectLease,
  MsgSetItemCustomDomain,
  MsgWithdraw,
} from "../../../src/chain/proto/index.ts";
import { DEFAULT_PARAMS } from "../../../src/devnet/modules/billing/params.ts";
import { type Chain, msg, startChain } from "./harness.ts";

let chain: Chain;
let t1: string;
let provider: string;
let small: string;
const V7 = "01a22a20-38ff-7000-9a8b-43bc8a5978a3";
const V4 = "0b8c2b1e-6a2f-4c55-9a8b-43bc8a5978a3";

before(async () => {
  chain = await startChain();
  t1 = chain.address("tenant1");
  provider = chain.address("provider");
  small = chain.devnet.keys.skus[0]!.uuid;
});
after(() => chain.stop());

const item = (over: Record<string, unknown> = {}) => ({
  skuUuid: small,
  quantity: 1n,
  serviceName: "",
  ...over,
});

/** [name, signer, message, codespace, code] rejected by ValidateBasic. */
function checkTxCases(): [string, string, EncodeObject, string, number][] {
  return [
    [
      "fund: zero amount",
      "tenant1",
      msg(MsgFundCredit, { sender: t1, tenant: t1, amount: { denom: "upwr", amount: "0" } }),
      "billing",
      19,
    ],
    [
      "fund: bad tenant",
      "tenant1",
      msg(MsgFundCredit, { sender: t1, tenant: "manifest1xyz", amount: { denom: "upwr", amount: "5" } }),
      "billing",
      19,
    ],
    ["create: no items", "tenant1", msg(MsgCreateLease, { tenant: t1, items: [] }), "billing", 16],
    [
      "create: 101 items",
      "tenant1",
      msg(MsgCreateLease, {
        tenant: t1,
        items: Array.from({ length: 101 }, (_, i) => item({ serviceName: `s${i}` })),
      }),
      "billing",
      21,
    ],
    [
      "create: v4 sku uuid",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item({ skuUuid: V4 })] }),
      "billing",
      9,
    ],
    [
      "create: quantity 0",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item({ quantity: 0n })] }),
      "billing",
      17,
    ],
    [
      "create: quantity above 1e9",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item({ quantity: 1_000_000_001n })] }),
      "billing",
      17,
    ],
    [
      "create: duplicate sku",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item(), item()] }),
      "billing",
      18,
    ],
    [
      "create: half named",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item({ serviceName: "web" }), item()] }),
      "billing",
      28,
    ],
    [
      "create: bad service name",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item({ serviceName: "Web" })] }),
      "billing",
      28,
    ],
    [
      "create: meta_hash 65 bytes",
      "tenant1",
      msg(MsgCreateLease, { tenant: t1, items: [item()], metaHash: new Uint8Array(65) }),
      "billing",
      27,
    ],
    [
      "for-tenant: bad tenant",
      "tenant1",
      msg(MsgCreateLeaseForTenant, { authority: t1, tenant: "cosmos1abc", items: [item()] }),
      "billing",
      9,
    ],
    ["ack: empty", "provider", msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [] }), "billing", 9],
    [
      "ack: 101 uuids",
      "provider",
      msg(MsgAcknowledgeLease, {
        sender: provider,
        leaseUuids: Array.from({ length: 101 }, (_, i) => `${V7.slice(0, -3)}${String(i).padStart(3, "0")}`),
      }),
      "billing",
      9,
    ],
    [
      "ack: duplicate",
      "provider",
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [V7, V7] }),
      "billing",
      9,
    ],
    [
      "ack: uppercase",
      "provider",
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [V7.toUpperCase()] }),
      "billing",
      9,
    ],
    [
      "reject: reason 257 bytes",
      "provider",
      msg(MsgRejectLease, { sender: provider, leaseUuids: [V7], reason: "r".repeat(257) }),
      "billing",
      24,
    ],
    [
      "close: reason 257 bytes",
      "provider",
      msg(MsgCloseLease, { sender: provider, leaseUuids: [V7], reason: "r".repeat(257) }),
      "billing",
      26,
    ],
    ["cancel: v4 uuid", "tenant1", msg(MsgCancelLease, { tenant: t1, leaseUuids: [V4] }), "billing", 9],
    ["withdraw: neither mode", "provider", msg(MsgWithdraw, { sender: provider }), "billing", 25],
    [
      "withdraw: both modes",
      "provider",
      msg(MsgWithdraw, { sender: provider, leaseUuids: [V7], providerUuid: V7 }),
      "billing",
      25,
    ],
    [
      "withdraw: provider uuid v4",
      "provider",
      msg(MsgWithdraw, { sender: provider, providerUuid: V4 }),
      "billing",
      12,
    ],
    [
      "domain: uppercase",
      "tenant1",
      msg(MsgSetItemCustomDomain, { sender: t1, leaseUuid: V7, customDomain: "App.example.com" }),
      "billing",
      29,
    ],
    [
      "domain: no dot",
      "tenant1",
      msg(MsgSetItemCustomDomain, { sender: t1, leaseUuid: V7, customDomain: "localhost" }),
      "billing",
      29,
    ],
    [
      "domain: scheme",
      "tenant1",
      msg(MsgSetItemCustomDomain, { sender: t1, leaseUuid: V7, customDomain: "https://a.example.com" }),
      "billing",
      29,
    ],
    [
      "domain: numeric tld",
      "tenant1",
      msg(MsgSetItemCustomDomain, { sender: t1, leaseUuid: V7, customDomain: "a.b.123" }),
      "billing",
      29,
    ],
    [
      "domain: bad service",
      "tenant1",
      msg(MsgSetItemCustomDomain, {
        sender: t1,
        leaseUuid: V7,
        serviceName: "-x",
        customDomain: "a.example.com",
      }),
      "billing",
      28,
    ],
    [
      "domain: bad lease uuid",
      "tenant1",
      msg(MsgSetItemCustomDomain, { sender: t1, leaseUuid: "nope", customDomain: "a.example.com" }),
      "billing",
      9,
    ],
    [
      "params: pending_timeout 10",
      "tenant1",
      msg(BillingMsgUpdateParams, { authority: t1, params: { ...DEFAULT_PARAMS, pendingTimeout: 10n } }),
      "billing",
      1,
    ],
    [
      "params: max_items 101",
      "tenant1",
      msg(BillingMsgUpdateParams, { authority: t1, params: { ...DEFAULT_PARAMS, maxItemsPerLease: 101n } }),
      "billing",
      1,
    ],
    [
      "authz: grant to self",
      "provider",
      {
        typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
        value: MsgGrant.fromPartial({
          granter: provider,
          grantee: provider,
          grant: {
            authorization: {
              typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
              value: GenericAuthorization.encode({ msg: MsgAcknowledgeLease.typeUrl }).finish(),
            },
          },
        }),
      },
      "authz",
      7,
    ],
  ];
}

describe("ValidateBasic at CheckTx", () => {
  it("refuses every malformed Msg before it reaches a block, with codespace and code", async () => {
    const before = await chain.snapshot();
    const height = (await chain.comet.status()).syncInfo.latestBlockHeight;
    for (const [name, signer, m, codespace, code] of checkTxCases()) {
      const r = await chain.broadcastSync(signer, [m]);
      assert.deepEqual([r.codespace, r.code], [codespace, code], `${name}: ${r.log}`);
    }
    assert.equal((await chain.comet.status()).syncInfo.latestBlockHeight, height, "no block was produced");
    const afterSnap = await chain.snapshot();
    assert.deepEqual(afterSnap.leases, before.leases);
    assert.deepEqual(afterSnap.accounts, before.accounts);
  });
});

describe("state checks in the block", () => {
  it("fail with the registered code and leave the ledger unchanged", async () => {
    const faucet = chain.address("faucet");
    const cases: [string, string, EncodeObject, number][] = [
      ["ack unknown lease", "provider", msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [V7] }), 2],
      [
        "create for a tenant without credit",
        "faucet",
        msg(MsgCreateLease, { tenant: faucet, items: [item()] }),
        8,
      ],
      [
        "create with an unknown sku",
        "tenant1",
        msg(MsgCreateLease, { tenant: t1, items: [item({ skuUuid: V7 })] }),
        10,
      ],
      [
        "for-tenant by a stranger",
        "tenant1",
        msg(MsgCreateLeaseForTenant, { authority: t1, tenant: t1, items: [item()] }),
        6,
      ],
      [
        "params by a stranger",
        "tenant1",
        msg(BillingMsgUpdateParams, { authority: t1, params: DEFAULT_PARAMS }),
        6,
      ],
      [
        "fund more than the wallet holds",
        "tenant1",
        msg(MsgFundCredit, { sender: t1, tenant: t1, amount: { denom: "upwr", amount: "999999999999999" } }),
        19,
      ],
      ["close unknown lease", "tenant1", msg(MsgCloseLease, { sender: t1, leaseUuids: [V7] }), 2],
    ];
    await chain.assertInvariants();
    const before = await chain.snapshot();
    for (const [name, signer, m, code] of cases) {
      const res = await chain.send(signer, [m]);
      assert.equal(res.code, code, `${name}: ${res.rawLog}`);
      const r = await chain.txResult(res.transactionHash);
      assert.equal(r.codespace, "billing", name);
      assert.deepEqual(
        res.events.filter((e) => e.type.startsWith("lease_") || e.type === "credit_funded"),
        [],
        name,
      );
    }
    const afterSnap = await chain.snapshot();
    assert.deepEqual(afterSnap.leases, before.leases);
    assert.deepEqual(afterSnap.accounts, before.accounts);
    await chain.assertInvariants();
  });

  it("caps PENDING leases per tenant at max_pending_leases_per_tenant (code 23)", async () => {
    const t2 = chain.address("tenant2");
    const create = () => msg(MsgCreateLease, { tenant: t2, items: [item()] });
    const ten = await chain.send("tenant2", Array.from({ length: 10 }, create), {
      amount: [{ denom: "umfx", amount: "200000" }],
      gas: "4000000",
    });
    assert.equal(ten.code, 0, ten.rawLog);
    const eleventh = await chain.send("tenant2", [create()]);
    assert.equal(eleventh.code, 23);
    assert.equal((await chain.txResult(eleventh.transactionHash)).codespace, "billing");
    await chain.assertInvariants();
  });

  it("rolls back a whole batch when one lease fails", async () => {
    const ok = await chain.send("tenant1", [msg(MsgCreateLease, { tenant: t1, items: [item()] })]);
    assert.equal(ok.code, 0, ok.rawLog);
    const before = await chain.snapshot();
    const uuid = before.leases[0]!.uuid;
    const res = await chain.send("provider", [
      msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid, V7] }),
    ]);
    assert.equal(res.code, 2);
    assert.deepEqual((await chain.snapshot()).leases, before.leases);
  });
});
