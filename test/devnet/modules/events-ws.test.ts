/**
 * Billing events through a CometBFT websocket with exactly the subscriptions providerd sends
 * (fred-wire §4.5, ids 1–4), plus NewBlock for EndBlock expiry: the flattened
 * `result.events` map carries parallel `<type>.<attr>` arrays per lease.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import WebSocket from "ws";
import {
  MsgAcknowledgeLease,
  MsgCloseLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgWithdraw,
} from "../../../src/chain/proto/index.ts";
import { until } from "../../support/index.ts";
import { type Chain, msg, startChain } from "./harness.ts";

interface Frame {
  id: number;
  result?: { query?: string; data?: { type: string }; events?: Record<string, string[]> };
  error?: unknown;
}

let chain: Chain;
let ws: WebSocket;
const frames: Frame[] = [];
let puuid: string;

before(async () => {
  chain = await startChain();
  puuid = chain.devnet.keys.provider_uuid;
  ws = new WebSocket(`${chain.devnet.wsUrl}/websocket`);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  ws.on("message", (data) => frames.push(JSON.parse(String(data)) as Frame));
  const queries = [
    `tm.event='Tx' AND lease_created.provider_uuid='${puuid}'`,
    "tm.event='Tx' AND lease_auto_closed.reason='credit_exhausted'",
    `tm.event='Tx' AND lease_closed.provider_uuid='${puuid}'`,
    `tm.event='Tx' AND lease_expired.provider_uuid='${puuid}'`,
    "tm.event='NewBlock'",
  ];
  for (const [i, query] of queries.entries())
    ws.send(JSON.stringify({ jsonrpc: "2.0", method: "subscribe", id: i + 1, params: { query } }));
  await until(
    () => frames.filter((f) => f.result !== undefined && f.result.events === undefined).length >= 5,
    "5 subscription acknowledgements",
    { timeoutMs: 20_000, intervalMs: 50 },
  );
});
after(async () => {
  ws.close();
  await chain.stop();
});

const notifications = (id: number) => frames.filter((f) => f.id === id && f.result?.events !== undefined);
const waitNotification = (id: number, pred: (e: Record<string, string[]>) => boolean) =>
  until(
    () => notifications(id).find((f) => pred(f.result?.events ?? {}))?.result?.events,
    `a notification on subscription ${id}`,
    {
      timeoutMs: 20_000,
      intervalMs: 50,
    },
  );

describe("websocket delivery with providerd's filters", () => {
  let leases: string[] = [];

  it("delivers lease_created for our provider with parallel arrays per lease", async () => {
    const t1 = chain.address("tenant1");
    const small = chain.devnet.keys.skus[0]!.uuid;
    const m = () =>
      msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity: 1n, serviceName: "" }] });
    const res = await chain.send("tenant1", [m(), m()], {
      amount: [{ denom: "umfx", amount: "40000" }],
      gas: "800000",
    });
    assert.equal(res.code, 0, res.rawLog);
    leases = res.msgResponses.map((r) => MsgCreateLeaseResponse.decode(r.value).leaseUuid);
    const events = await waitNotification(
      1,
      (e) => e["lease_created.lease_uuid"]?.includes(leases[0]!) ?? false,
    );
    assert.deepEqual(events["lease_created.lease_uuid"], leases);
    assert.deepEqual(events["lease_created.provider_uuid"], [puuid, puuid]);
    assert.deepEqual(events["lease_created.tenant"], [t1, t1]);
    assert.deepEqual(events["lease_created.created_by"], ["tenant", "tenant"]);
    assert.deepEqual(events["tm.event"], ["Tx"]);
    assert.equal(events["tx.hash"]?.[0], res.transactionHash);
    assert.deepEqual(events["message.module"], ["billing", "billing"]);
    assert.deepEqual(events["lease_created.msg_index"], ["0", "1"]);
  });

  it("delivers lease_closed for our provider", async () => {
    const provider = chain.address("provider");
    assert.equal(
      (await chain.send("provider", [msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: leases })]))
        .code,
      0,
    );
    const t1 = chain.address("tenant1");
    const res = await chain.send("tenant1", [
      msg(MsgCloseLease, { sender: t1, leaseUuids: leases, reason: "done" }),
    ]);
    assert.equal(res.code, 0, res.rawLog);
    const events = await waitNotification(
      3,
      (e) => e["lease_closed.lease_uuid"]?.includes(leases[0]!) ?? false,
    );
    assert.deepEqual(events["lease_closed.lease_uuid"], leases);
    assert.deepEqual(events["lease_closed.closed_by"], ["tenant", "tenant"]);
    assert.deepEqual(events["batch_closed.lease_count"], ["2"]);
  });

  it("publishes lease_expired only with the block (mode=EndBlock), never as a Tx event", async () => {
    const t1 = chain.address("tenant1");
    const small = chain.devnet.keys.skus[0]!.uuid;
    const res = await chain.send("tenant1", [
      msg(MsgCreateLease, { tenant: t1, items: [{ skuUuid: small, quantity: 1n, serviceName: "" }] }),
    ]);
    const uuid = MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
    await chain.advance(1801);
    await chain.produceBlock();
    const events = await waitNotification(5, (e) => e["lease_expired.lease_uuid"]?.includes(uuid) ?? false);
    assert.deepEqual(events["lease_expired.reason"], ["pending_timeout"]);
    assert.deepEqual(events["lease_expired.provider_uuid"], [puuid]);
    assert.ok(events["lease_expired.mode"]?.every((m) => m === "EndBlock"));
    assert.deepEqual(events["tm.event"], ["NewBlock"]);
    assert.equal(notifications(4).length, 0, "subscription 4 never fires");
  });

  it("delivers lease_auto_closed from a provider-wide withdraw to the unfiltered subscription", async () => {
    const t2 = chain.address("tenant2");
    const large = chain.devnet.keys.skus.find((s) => s.name === "docker-large")!.uuid;
    const res = await chain.send("tenant2", [
      msg(MsgCreateLease, { tenant: t2, items: [{ skuUuid: large, quantity: 690n, serviceName: "" }] }),
    ]);
    const uuid = MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
    const provider = chain.address("provider");
    assert.equal(
      (await chain.send("provider", [msg(MsgAcknowledgeLease, { sender: provider, leaseUuids: [uuid] })]))
        .code,
      0,
    );
    await chain.advance(3700);
    const w = await chain.send("provider", [
      msg(MsgWithdraw, { sender: provider, providerUuid: puuid, limit: 10n }),
    ]);
    assert.equal(w.code, 0, w.rawLog);
    const events = await waitNotification(
      2,
      (e) => e["lease_auto_closed.lease_uuid"]?.includes(uuid) ?? false,
    );
    assert.deepEqual(events["lease_auto_closed.tenant"], [t2]);
    assert.deepEqual(events["lease_auto_closed.reason"], ["credit_exhausted"]);
    assert.deepEqual(events["lease_auto_closed.amount"], ["1000000000upwr"]);
    assert.equal(
      notifications(3).filter((f) => f.result!.events!["tx.hash"]?.[0] === w.transactionHash).length,
      0,
      "no lease_closed for auto-close",
    );
    await chain.assertInvariants();
  });
});
