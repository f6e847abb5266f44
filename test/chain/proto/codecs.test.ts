import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "@cosmjs/proto-signing";
import { AminoTypes, createDefaultAminoConverters, defaultRegistryTypes } from "@cosmjs/stargate";
import { TxMsgData as CosmjsTxMsgData } from "cosmjs-types/cosmos/base/abci/v1beta1/abci";
import { PageRequest as CosmjsPageRequest } from "cosmjs-types/cosmos/base/query/v1beta1/pagination";
import { Coin as CosmjsCoin } from "cosmjs-types/cosmos/base/v1beta1/coin";
import {
  SimulateRequest as CosmjsSimulateRequest,
  SimulateResponse as CosmjsSimulateResponse,
} from "cosmjs-types/cosmos/tx/v1beta1/service";
import { LEASE_STATES } from "../../../src/chain/port.ts";
import {
  billingAminoConverters,
  billingRegistryTypes,
  Lease,
  LeaseState,
  MsgCreateLease,
  MsgWithdraw,
  MsgWithdrawResponse,
  QueryLeasesByProviderResponse,
  QueryProviderWithdrawableRequest,
  SimulateRequest,
  SimulateResponse,
  TxMsgData,
  toBytes,
  toBytesWithEncoded,
} from "../../../src/chain/proto/index.ts";

const tenant = "manifest1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc57qwfj5";
const sku = "0190d4a0-0000-7000-8000-000000000001";

describe("billing codecs", () => {
  it("round-trips a lease with every field kind", () => {
    const lease = Lease.fromPartial({
      uuid: "0190d4a0-0000-7001-8000-000000000002",
      tenant,
      providerUuid: "0190d4a0-0000-7000-8000-0000000000aa",
      items: [
        { skuUuid: sku, quantity: 3n, lockedPrice: { denom: "upwr", amount: "1000" }, serviceName: "web" },
      ],
      state: LeaseState.LEASE_STATE_ACTIVE,
      createdAt: { seconds: 1_700_000_000n, nanos: 5 },
      metaHash: new Uint8Array([1, 2, 3]),
      minLeaseDurationAtCreation: 3600n,
      reservation: { remainingAmounts: [{ denom: "upwr", amount: "10800000" }] },
    });
    const back = Lease.decode(toBytes(Lease, lease));
    assert.deepEqual(back, lease);
    assert.equal(back.closedAt, undefined);
    assert.equal(back.items[0]!.customDomain, "");
  });

  it("splices already-encoded messages into a list response: the same bytes as encoding them", () => {
    const leases = [1, 2, 3].map((i) =>
      Lease.fromPartial({
        uuid: `0190d4a0-0000-7001-8000-00000000000${i}`,
        tenant,
        items: [{ skuUuid: sku, quantity: BigInt(i), customDomain: i === 2 ? "a.example" : "" }],
        state: LeaseState.LEASE_STATE_ACTIVE,
        createdAt: { seconds: 1_700_000_000n + BigInt(i), nanos: i },
      }),
    );
    const pagination = { nextKey: new Uint8Array([9, 9]), total: 0n };
    const whole = toBytes(QueryLeasesByProviderResponse, { leases, pagination });
    const spliced = toBytesWithEncoded(
      QueryLeasesByProviderResponse,
      { pagination },
      "leases",
      leases.map((l) => toBytes(Lease, l)),
    );
    assert.deepEqual(Buffer.from(spliced), Buffer.from(whole));
    assert.deepEqual(QueryLeasesByProviderResponse.decode(spliced).leases, leases);
    // Only the leading repeated message field can be spliced (encode writes in table order).
    assert.throws(
      () => toBytesWithEncoded(QueryLeasesByProviderResponse, { leases: [] }, "pagination", []),
      /not the leading repeated message field/,
    );
  });

  it("writes the exact proto3 bytes for a known message", () => {
    const bytes = toBytes(
      MsgWithdraw,
      MsgWithdraw.fromPartial({ sender: "ab", limit: 5n, key: new Uint8Array([9]) }),
    );
    // field 1 string "ab", field 4 varint 5, field 5 bytes [9]; empty fields omitted
    assert.deepEqual([...bytes], [0x0a, 2, 0x61, 0x62, 0x20, 5, 0x2a, 1, 9]);
  });

  it("skips unknown fields and reads the newer-line withdraw response", () => {
    const resp = MsgWithdrawResponse.fromPartial({
      withdrawalCount: 2n,
      hasMore: true,
      nextKey: new Uint8Array([1]),
    });
    const bytes = toBytes(MsgWithdrawResponse, resp);
    const withUnknown = new Uint8Array([...bytes, 0xb8, 0x01, 7]); // field 23 varint 7
    assert.deepEqual(MsgWithdrawResponse.decode(withUnknown), resp);
  });

  it("embeds Coin and PageRequest bytes identical to cosmjs-types", () => {
    const page = { key: new Uint8Array([1, 2]), offset: 0n, limit: 100n, countTotal: true, reverse: false };
    const ours = toBytes(QueryProviderWithdrawableRequest, { providerUuid: "p", pagination: page });
    const theirs = CosmjsPageRequest.encode(CosmjsPageRequest.fromPartial(page)).finish();
    assert.deepEqual(ours.slice(ours.length - theirs.length), theirs);
    const coin = toBytes(MsgCreateLease, { tenant: "", items: [], metaHash: new Uint8Array() });
    assert.equal(coin.length, 0);
    const c = CosmjsCoin.encode({ denom: "upwr", amount: "7" }).finish();
    assert.deepEqual(
      Lease.fields.items!.codec!.fields.lockedPrice!.codec!.encode({ denom: "upwr", amount: "7" }).finish(),
      c,
    );
  });

  it("plugs into a cosmjs Registry and amino types", () => {
    const registry = new Registry([...defaultRegistryTypes, ...billingRegistryTypes]);
    const value = MsgCreateLease.fromPartial({ tenant, items: [{ skuUuid: sku, quantity: 1n }] });
    const any = registry.encodeAsAny({ typeUrl: MsgCreateLease.typeUrl, value });
    assert.equal(any.typeUrl, "/liftedinit.billing.v1.MsgCreateLease");
    assert.deepEqual(registry.decode(any), value);
    const amino = new AminoTypes({ ...createDefaultAminoConverters(), ...billingAminoConverters });
    const json = amino.toAmino({ typeUrl: MsgCreateLease.typeUrl, value });
    assert.deepEqual(json, {
      type: "lifted/billing/MsgCreateLease",
      // As the chain's amino converters write it: bytes always, so an empty meta_hash is "".
      value: { tenant, items: [{ sku_uuid: sku, quantity: "1" }], meta_hash: "" },
    });
    assert.deepEqual(amino.fromAmino(json).value, value);
  });

  it("reads Simulate and a tx's message responses as cosmjs-types writes them, and writes Simulate's request alike", () => {
    const txBytes = new Uint8Array([10, 3, 1, 2, 3]);
    assert.deepEqual(
      toBytes(SimulateRequest, { txBytes }),
      CosmjsSimulateRequest.encode(CosmjsSimulateRequest.fromPartial({ txBytes })).finish(),
    );
    const response = CosmjsSimulateResponse.fromPartial({
      gasInfo: { gasWanted: 0n, gasUsed: 81_234n },
      result: { log: "ok", events: [{ type: "message", attributes: [{ key: "action", value: "x" }] }] },
    });
    const read = SimulateResponse.decode(CosmjsSimulateResponse.encode(response).finish());
    assert.deepEqual(read.gasInfo, { gasWanted: 0n, gasUsed: 81_234n });
    const msgResponses = [
      { typeUrl: MsgWithdrawResponse.typeUrl, value: new Uint8Array([1]) },
      { typeUrl: "/cosmos.bank.v1beta1.MsgSendResponse", value: new Uint8Array() },
    ];
    const data = CosmjsTxMsgData.encode(
      CosmjsTxMsgData.fromPartial({ data: [{ msgType: "legacy", data: new Uint8Array([9]) }], msgResponses }),
    ).finish();
    assert.deepEqual(TxMsgData.decode(data).msgResponses, msgResponses);
  });

  it("refuses a malformed Simulate answer or message-response list instead of reading part of it", () => {
    const gas = CosmjsSimulateResponse.encode(
      CosmjsSimulateResponse.fromPartial({ gasInfo: { gasWanted: 0n, gasUsed: 81_234n } }),
    ).finish();
    const cases: [string, () => unknown, RegExp][] = [
      ["cut short", () => SimulateResponse.decode(gas.subarray(0, gas.length - 1)), /premature EOF/],
      // gas_info as a varint: read as a length, it would decode what follows as the gas.
      [
        "gas_info not a message",
        () => SimulateResponse.decode(new Uint8Array([0x08, 0x00])),
        /gasInfo \(1\)/,
      ],
      ["a zero tag", () => SimulateResponse.decode(new Uint8Array([0x00])), /illegal tag/],
      [
        "a skipped result cut short",
        () => SimulateResponse.decode(new Uint8Array([0x12, 0x7f, 0x01])),
        /EOF/,
      ],
      ["a response cut short", () => TxMsgData.decode(new Uint8Array([0x12, 0x09, 0x0a, 0x01])), /EOF/],
      [
        "a response's type URL a varint",
        () => TxMsgData.decode(new Uint8Array([0x12, 0x02, 0x08, 0x01])),
        /typeUrl/,
      ],
    ];
    for (const [what, decode, message] of cases) assert.throws(decode, message, what);
  });

  it("gives every Msg and response a type URL in the liftedinit packages", () => {
    assert.ok(billingRegistryTypes.length >= 34);
    for (const [url] of billingRegistryTypes) assert.match(url, /^\/liftedinit\.(billing|sku)\.v1\.Msg\w+$/);
  });
});

describe("lease states", () => {
  it("the port's LEASE_STATES are the chain's LeaseState names in number order", () => {
    // The adapter converts a state number to its name by index into LEASE_STATES, and back.
    assert.deepEqual(
      LEASE_STATES.map((name, n) => [name, n]),
      Object.entries(LeaseState).sort(([, a], [, b]) => a - b),
    );
  });
});
