import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { classifyFrame, parseAbciEvents, parseTxEventMap } from "../../../src/chain/events/parse.ts";
import {
  blockEventsFrame,
  createdEvents,
  ev,
  flatten,
  headerFrame,
  leaseUuid,
  OTHER_PROVIDER,
  PROVIDER,
  TENANT,
  txFrame,
} from "./frames.ts";

describe("event parsing", () => {
  it("reads lockstep arrays: several events per tx, each lease paired with its own provider/tenant", () => {
    const events = [...createdEvents(3), ...createdEvents(2, OTHER_PROVIDER, 10)];
    const frame = classifyFrame(txFrame(1, "q", 42, events));
    assert.equal(frame.type, "tx");
    if (frame.type !== "tx") return;
    assert.equal(frame.height, 42);
    assert.match(frame.txHash ?? "", /^[0-9A-F]{64}$/);
    const out = parseTxEventMap(frame.eventMap, ["lease_created"], PROVIDER, frame.height, frame.txHash);
    assert.equal(out.malformed, 0);
    assert.deepEqual(
      out.events.map((e) => [e.kind, e.leaseUuid, e.providerUuid, e.tenant, e.height]),
      [0, 1, 2].map((i) => ["lease_created", leaseUuid(i), PROVIDER, TENANT, 42]),
    );
  });

  it("filters lease_auto_closed by reason only (every provider), and ignores kinds not asked for", () => {
    const events = [
      ev("lease_auto_closed", {
        lease_uuid: leaseUuid(1),
        tenant: TENANT,
        provider_uuid: OTHER_PROVIDER,
        amount: "5upwr",
        payout_address: TENANT,
        reason: "credit_exhausted",
      }),
      ev("lease_auto_closed", {
        lease_uuid: leaseUuid(2),
        tenant: TENANT,
        provider_uuid: PROVIDER,
        amount: "",
        payout_address: TENANT,
        reason: "something_else",
      }),
      ev("lease_closed", {
        lease_uuid: leaseUuid(3),
        tenant: TENANT,
        provider_uuid: PROVIDER,
        closed_by: "tenant",
      }),
    ];
    const map = flatten(events, {});
    const auto = parseTxEventMap(map, ["lease_auto_closed"], PROVIDER, 7, undefined);
    assert.deepEqual(
      auto.events.map((e) => [e.leaseUuid, e.providerUuid, e.reason]),
      [[leaseUuid(1), OTHER_PROVIDER, "credit_exhausted"]],
    );
    const closed = parseTxEventMap(map, ["lease_closed"], PROVIDER, 7, undefined);
    assert.deepEqual(
      closed.events.map((e) => [e.kind, e.leaseUuid, e.reason]),
      [["lease_closed", leaseUuid(3), "tenant"]],
    );
  });

  it("unknown attributes are ignored; optional attributes do not break the pairing", () => {
    const events = [
      ev("lease_created", {
        lease_uuid: leaseUuid(1),
        tenant: TENANT,
        provider_uuid: PROVIDER,
        meta_hash: "ab".repeat(32),
        brand_new: "x",
      }),
      ev("lease_created", { lease_uuid: leaseUuid(2), tenant: TENANT, provider_uuid: PROVIDER }),
    ];
    const out = parseTxEventMap(flatten(events, {}), ["lease_created"], PROVIDER, 1, undefined);
    assert.equal(out.malformed, 0);
    assert.deepEqual(
      out.events.map((e) => e.leaseUuid),
      [leaseUuid(1), leaseUuid(2)],
    );
  });

  it("malformed entries are counted and skipped, never thrown", () => {
    const map = flatten(
      [
        ev("lease_created", { lease_uuid: "not-a-uuid", tenant: TENANT, provider_uuid: PROVIDER }),
        ev("lease_created", { lease_uuid: leaseUuid(5), tenant: "", provider_uuid: PROVIDER }),
        ev("lease_created", { lease_uuid: leaseUuid(6), tenant: TENANT, provider_uuid: PROVIDER }),
      ],
      {},
    );
    const out = parseTxEventMap(map, ["lease_created"], PROVIDER, 1, undefined);
    assert.equal(out.malformed, 2);
    assert.deepEqual(
      out.events.map((e) => e.leaseUuid),
      [leaseUuid(6)],
    );
    // Lockstep arrays of different lengths cannot be paired: the whole kind is skipped.
    const skewed = {
      "lease_closed.lease_uuid": [leaseUuid(1), leaseUuid(2)],
      "lease_closed.provider_uuid": [PROVIDER],
      "lease_closed.tenant": [TENANT, TENANT],
    };
    assert.deepEqual(parseTxEventMap(skewed, ["lease_closed"], PROVIDER, 1, undefined), {
      events: [],
      malformed: 2,
    });
    const wrongTypes = {
      "lease_closed.lease_uuid": "x",
      "lease_closed.provider_uuid": [1],
      "lease_closed.tenant": null,
    };
    assert.equal(parseTxEventMap(wrongTypes, ["lease_closed"], PROVIDER, 1, undefined).malformed, 1);
    assert.equal(parseTxEventMap(null, ["lease_closed"], PROVIDER, 1, undefined).malformed, 1);
    assert.equal(parseAbciEvents("nope", ["lease_expired"], PROVIDER, 1, undefined).malformed, 1);
    assert.equal(
      parseAbciEvents([null, 5, { type: "lease_expired" }], ["lease_expired"], PROVIDER, 1, undefined)
        .malformed,
      3,
    );
  });

  it("block events: EndBlock lease_expired for our provider (mode=EndBlock attribute tolerated)", () => {
    const list = [
      ev("lease_expired", {
        lease_uuid: leaseUuid(1),
        tenant: TENANT,
        provider_uuid: PROVIDER,
        reason: "pending_timeout",
        mode: "EndBlock",
      }),
      ev("lease_expired", {
        lease_uuid: leaseUuid(2),
        tenant: TENANT,
        provider_uuid: OTHER_PROVIDER,
        reason: "pending_timeout",
        mode: "EndBlock",
      }),
      ev("coin_spent", { spender: TENANT, amount: "1umfx" }),
    ];
    const frame = classifyFrame(blockEventsFrame(4, 99, list));
    assert.equal(frame.type, "block");
    if (frame.type !== "block") return;
    const out = parseAbciEvents(frame.events, ["lease_expired"], PROVIDER, frame.height, undefined);
    assert.deepEqual(
      out.events.map((e) => [e.kind, e.leaseUuid, e.reason, e.height]),
      [["lease_expired", leaseUuid(1), "pending_timeout", 99]],
    );
  });

  it("classifies acks, errors, headers and garbage frames", () => {
    assert.deepEqual(classifyFrame('{"jsonrpc":"2.0","id":1,"result":{}}'), { type: "ack", id: 1 });
    const err = classifyFrame(
      '{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"Internal error","data":"bad query"}}',
    );
    assert.deepEqual(err, { type: "rpc_error", id: 4, message: "Internal error: bad query" });
    assert.deepEqual(classifyFrame(headerFrame(5, 12)), {
      type: "block",
      id: 5,
      height: 12,
      events: undefined,
    });
    for (const bad of [
      "",
      "{",
      "[]",
      '{"jsonrpc":"1.0"}',
      '{"jsonrpc":"2.0","id":1}',
      '{"jsonrpc":"2.0","id":1,"result":{"query":"q"}}',
      '{"jsonrpc":"2.0","id":1,"result":{"query":"q","data":{"type":"tendermint/event/Vote","value":{}}}}',
      '{"jsonrpc":"2.0","id":1,"result":{"query":"q","data":{"type":"tendermint/event/Tx","value":{"TxResult":{"height":"x"}}}}}',
    ]) {
      assert.equal(classifyFrame(bad).type, "malformed", bad);
    }
  });
});
