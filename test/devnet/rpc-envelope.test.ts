/**
 * The CometBFT JSON-RPC surface checked field by field (cometbft-rpc.md §6): envelopes, JSON
 * types, errors for malformed requests, websocket subscriptions, and the devnet_* controls.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { QueryBalanceRequest, QueryBalanceResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import WebSocket from "ws";
import { buildSignedTx } from "../../src/devnet/tx/build.ts";
import { type Devnet, devnet, until } from "../support/index.ts";
import { rpc } from "./helpers.ts";

// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies, asserted field by field.
type Json = any;

async function post(url: string, body: string) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, json: (await res.json().catch(() => undefined)) as Json };
}

/** A websocket that collects every message, with a helper to await one by predicate. */
async function openSocket(url: string) {
  const ws = new WebSocket(`${url}/websocket`);
  const inbox: Json[] = [];
  const waiters: { pred: (m: Json) => boolean; resolve: (m: Json) => void }[] = [];
  ws.on("message", (raw) => {
    const msg = JSON.parse(String(raw));
    const i = waiters.findIndex((w) => w.pred(msg));
    if (i >= 0) waiters.splice(i, 1)[0]?.resolve(msg);
    else inbox.push(msg);
  });
  await new Promise((r, j) => {
    ws.once("open", r);
    ws.once("error", j);
  });
  return {
    ws,
    inbox,
    send: (obj: unknown) => ws.send(typeof obj === "string" ? obj : JSON.stringify(obj)),
    next(pred: (m: Json) => boolean): Promise<Json> {
      const i = inbox.findIndex(pred);
      if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]);
      return new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}

/**
 * Announces a frame of `length` bytes and sends only its header, then returns the first frame
 * the server answers with. A real client still writing a 2 MB frame when the server closes can
 * be reset by TCP before it reads the close frame (it then reports 1006), so the check speaks
 * raw WebSocket: with nothing left to send, the server's close frame always arrives.
 */
async function oversizeFrameAnswer(wsUrl: string, length: number): Promise<{ opcode: number; code: number }> {
  const { hostname, port } = new URL(wsUrl);
  const sock = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  sock.on("data", (b) => chunks.push(b));
  let closed = false;
  sock.once("close", () => {
    closed = true;
  });
  await new Promise<void>((resolve) => sock.once("connect", resolve));
  sock.write(
    `GET /websocket HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await until(() => Buffer.concat(chunks).includes("\r\n\r\n"), "the upgrade answer");
  const header = Buffer.alloc(14);
  header[0] = 0x81; // FIN, text
  header[1] = 0x80 | 127; // masked, 64-bit length follows
  header.writeBigUInt64BE(BigInt(length), 2);
  randomBytes(4).copy(header, 10);
  sock.write(header);
  await until(() => closed, "the server closing the connection");
  const all = Buffer.concat(chunks);
  const frame = all.subarray(all.indexOf("\r\n\r\n") + 4);
  return { opcode: (frame[0] ?? 0) & 0x0f, code: frame.readUInt16BE(2) };
}

/**
 * The HTTP status the server answers a POST announcing a `length`-byte body with, sent with
 * only its first bytes. As for the WebSocket frame above: a client still writing 2 MB when
 * the server answers 413 and closes can fail with EPIPE before it reads the answer.
 */
async function oversizeBodyStatus(rpcUrl: string, length: number): Promise<number> {
  const { hostname, port } = new URL(rpcUrl);
  const sock = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  sock.on("data", (b) => chunks.push(b));
  sock.on("error", () => {});
  await new Promise<void>((resolve) => sock.once("connect", resolve));
  sock.write(
    `POST / HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${length}\r\nConnection: close\r\n\r\n{"jsonrpc":"2.0",`,
  );
  const head = await until(() => {
    const text = Buffer.concat(chunks).toString("latin1");
    return text.includes("\r\n") ? text : undefined;
  }, "the status line");
  sock.destroy();
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
}

describe("CometBFT RPC envelope and methods", () => {
  let dn: Devnet;
  let seq = 0n;

  const sendTx = () => {
    const t1 = dn.account("tenant1");
    const tx = buildSignedTx({
      chainId: "fred-devnet-1",
      messages: [
        {
          typeUrl: "/cosmos.bank.v1beta1.MsgSend",
          value: MsgSend.encode({
            fromAddress: t1.address,
            toAddress: dn.account("tenant2").address,
            amount: [{ denom: "umfx", amount: "3" }],
          }).finish(),
        },
      ],
      signers: [{ privateKey: Buffer.from(t1.private_key_hex, "hex"), accountNumber: 1n, sequence: seq++ }],
      fee: { amount: [{ denom: "umfx", amount: "5000" }], gasLimit: 200_000n },
    });
    return Buffer.from(tx).toString("base64");
  };

  before(async () => {
    dn = await devnet();
  });

  after(async () => {
    await dn?.stop();
  });

  it("echoes ids with their JSON type and answers batches with arrays", async () => {
    const a = await post(dn.rpc, JSON.stringify({ jsonrpc: "2.0", id: "abc", method: "health", params: {} }));
    assert.deepEqual(a.json, { jsonrpc: "2.0", id: "abc", result: {} });
    const b = await post(
      dn.rpc,
      JSON.stringify([
        { jsonrpc: "2.0", id: 7, method: "health" },
        { jsonrpc: "2.0", id: 8, method: "nope" },
      ]),
    );
    assert.equal(b.status, 200);
    assert.deepEqual(b.json, [
      { jsonrpc: "2.0", id: 7, result: {} },
      { jsonrpc: "2.0", id: 8, error: { code: -32601, message: "Method not found" } },
    ]);
  });

  it("answers garbage with JSON-RPC errors on HTTP 200, and oversized bodies with 413", async () => {
    const garbage = await post(dn.rpc, "{not json");
    assert.equal(garbage.status, 200);
    assert.equal(garbage.json.error.code, -32700);
    const noMethod = await post(dn.rpc, JSON.stringify({ jsonrpc: "2.0", id: 1 }));
    assert.equal(noMethod.json.error.code, -32600);
    const wrongParams = await post(
      dn.rpc,
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "block", params: { height: "x" } }),
    );
    assert.equal(wrongParams.json.error.code, -32602);
    const subscribeOverHttp = await rpc(dn.rpc, "subscribe", { query: "tm.event='Tx'" });
    assert.equal(subscribeOverHttp.error.code, -32601);
    assert.equal(await oversizeBodyStatus(dn.rpc, 2_100_000), 413);
    const wrongPath = await fetch(`${dn.rpc}/nowhere/else`, { method: "POST", body: "{}" });
    assert.equal(wrongPath.status, 404);
    assert.deepEqual((await rpc(dn.rpc, "health")).result, {}, "still serving");
  });

  it("status has the 0.38 version string and string-typed numbers", async () => {
    const s = (await rpc(dn.rpc, "status")).result;
    assert.match(s.node_info.version, /^0\.38\.\d+$/);
    assert.equal(s.node_info.network, "fred-devnet-1");
    assert.equal(typeof s.node_info.protocol_version.block, "string");
    assert.match(s.sync_info.latest_block_height, /^[1-9][0-9]*$/);
    assert.match(s.sync_info.latest_block_hash, /^[0-9A-F]{64}$/);
    assert.equal(s.sync_info.catching_up, false);
    assert.equal(s.validator_info.pub_key.type, "tendermint/PubKeyEd25519");
    assert.equal(s.validator_info.voting_power, "10");
  });

  it("serves URI requests (GET /<method>?arg=…)", async () => {
    const data = Buffer.from(
      QueryBalanceRequest.encode({ address: dn.account("faucet").address, denom: "umfx" }).finish(),
    ).toString("hex");
    const res = await fetch(`${dn.rpc}/abci_query?path="/cosmos.bank.v1beta1.Query/Balance"&data=0x${data}`);
    const body = (await res.json()) as Json;
    const bal = QueryBalanceResponse.decode(Buffer.from(body.result.response.value, "base64"));
    assert.equal(bal.balance?.amount, "1000000000000000");
    assert.match(body.result.response.height, /^[1-9]/);
    assert.equal(body.result.response.proofOps, null);
  });

  it("abci_query errors: unknown path code 6, bad address code 18", async () => {
    const unknown = (await rpc(dn.rpc, "abci_query", { path: "/no.such.Query/Thing", data: "" })).result
      .response;
    assert.equal(unknown.code, 6);
    assert.equal(unknown.log, "unknown query path: unknown request");
    const data = Buffer.from(
      QueryBalanceRequest.encode({ address: "manifest1bad", denom: "umfx" }).finish(),
    ).toString("hex");
    const bad = (await rpc(dn.rpc, "abci_query", { path: "/cosmos.bank.v1beta1.Query/Balance", data })).result
      .response;
    assert.equal(bad.code, 18);
    assert.match(bad.log, /decoding bech32 failed: .*: invalid request$/);
    const badHex = await rpc(dn.rpc, "abci_query", {
      path: "/cosmos.bank.v1beta1.Query/Balance",
      data: "zz",
    });
    assert.equal(badHex.error.code, -32602);
  });

  it("blocks: height 1 shape, latest, above the tip, results in step with txs", async () => {
    const one = (await rpc(dn.rpc, "block", { height: "1" })).result;
    assert.deepEqual(one.block.header.last_block_id, { hash: "", parts: { total: 0, hash: "" } });
    assert.equal(one.block.last_commit.height, "0");
    assert.equal(one.block_id.parts.total, 1);
    assert.equal(one.block.header.version.block, "11");
    assert.match(one.block.header.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    const commit = await rpc(dn.rpc, "broadcast_tx_commit", { tx: sendTx() });
    const h = commit.result.height;
    const latest = (await rpc(dn.rpc, "block")).result;
    assert.equal(latest.block.header.height, h);
    assert.equal(latest.block.data.txs.length, 1);
    assert.equal(latest.block.last_commit.signatures[0].block_id_flag, 2);
    const results = (await rpc(dn.rpc, "block_results", { height: h })).result;
    assert.equal(results.height, h);
    assert.equal(results.txs_results.length, 1);
    assert.equal(typeof results.txs_results[0].gas_used, "string");
    assert.ok(Array.isArray(results.finalize_block_events));
    assert.equal(results.consensus_param_updates.block.max_bytes, "22020096");
    const above = await rpc(dn.rpc, "block", { height: String(Number(h) + 100) });
    assert.equal(above.error.code, -32603);
    assert.match(above.error.data, /must be less than or equal to the current blockchain height/);
    const chain = (await rpc(dn.rpc, "blockchain", { minHeight: "1", maxHeight: h })).result;
    assert.equal(chain.last_height, h);
    assert.equal(chain.block_metas[0].header.height, h);
    assert.equal(typeof chain.block_metas[0].num_txs, "string");
    for (const m of ["validators", "genesis", "abci_info", "commit", "num_unconfirmed_txs"]) {
      assert.equal((await rpc(dn.rpc, m)).error, undefined, m);
    }
  });

  it("tx and tx_search: types, paging, misses", async () => {
    const commit = await rpc(dn.rpc, "broadcast_tx_commit", { tx: sendTx() });
    const hash = commit.result.hash;
    const byHash = (await rpc(dn.rpc, "tx", { hash: Buffer.from(hash, "hex").toString("base64") })).result;
    assert.equal(byHash.hash, hash);
    assert.equal(typeof byHash.index, "number");
    assert.equal(typeof byHash.height, "string");
    assert.equal(byHash.tx_result.code, 0);
    assert.equal(byHash.tx_result.log, "");
    assert.equal(byHash.tx_result.data, "EiYKJC9jb3Ntb3MuYmFuay52MWJldGExLk1zZ1NlbmRSZXNwb25zZQ==");
    const msgEvents = byHash.tx_result.events.filter((e: Json) =>
      e.attributes.some((a: Json) => a.key === "msg_index"),
    );
    assert.equal(msgEvents[0].type, "message");
    assert.deepEqual(
      msgEvents[0].attributes.map((a: Json) => a.key),
      ["action", "sender", "module", "msg_index"],
    );
    const miss = await rpc(dn.rpc, "tx", { hash: Buffer.alloc(32, 1).toString("base64") });
    assert.equal(miss.error.data, `tx (${"01".repeat(32).toUpperCase()}) not found`);
    const lower = (await rpc(dn.rpc, "tx_search", { query: `tx.hash='${hash.toLowerCase()}'`, page: "1" }))
      .result;
    assert.equal(lower.total_count, "1");
    const none = (await rpc(dn.rpc, "tx_search", { query: `tx.hash='${"AB".repeat(32)}'`, page: "1" }))
      .result;
    assert.deepEqual(none, { txs: [], total_count: "0" });
    const all = (
      await rpc(dn.rpc, "tx_search", {
        query: "message.action='/cosmos.bank.v1beta1.MsgSend' AND tx.height>=1",
        per_page: "1",
        page: "2",
      })
    ).result;
    assert.equal(all.txs.length, 1);
    assert.ok(Number(all.total_count) >= 2);
    const out = await rpc(dn.rpc, "tx_search", { query: "tx.height>0", page: "999" });
    assert.match(out.error.data, /^page should be within \[1, \d+\] range, given 999$/);
    const bad = await rpc(dn.rpc, "tx_search", { query: "tx.height >>> 1" });
    assert.equal(bad.error.code, -32603);
  });

  it("websocket: subscribe ack without query, events with the same id, filters, unsubscribe", async () => {
    const s = await openSocket(dn.wsUrl);
    try {
      s.send({ jsonrpc: "2.0", id: 41, method: "subscribe", params: { query: "tm.event='Tx'" } });
      s.send({
        jsonrpc: "2.0",
        id: 42,
        method: "subscribe",
        params: { query: "tm.event='Tx' AND transfer.amount='999umfx'" },
      });
      s.send({ jsonrpc: "2.0", id: 43, method: "subscribe", params: { query: "tm.event='NewBlock'" } });
      for (const id of [41, 42, 43])
        assert.deepEqual(await s.next((m) => m.id === id), { jsonrpc: "2.0", id, result: {} });
      s.send({ jsonrpc: "2.0", id: 44, method: "status" });
      const status = await s.next((m) => m.id === 44);
      assert.match(status.result.node_info.version, /^0\.38\./);
      const sent = await rpc(dn.rpc, "broadcast_tx_sync", { tx: sendTx() });
      const ev = await s.next((m) => m.id === 41 && m.result?.query);
      assert.equal(ev.result.query, "tm.event='Tx'");
      assert.equal(ev.result.data.type, "tendermint/event/Tx");
      assert.equal(ev.result.events["tx.hash"][0], sent.result.hash);
      assert.equal(typeof ev.result.data.value.TxResult.height, "string");
      const block = await s.next((m) => m.id === 43 && m.result?.query);
      assert.equal(block.result.data.type, "tendermint/event/NewBlock");
      assert.ok(block.result.data.value.block.header.height);
      assert.ok(block.result.data.value.result_finalize_block);
      s.send({ jsonrpc: "2.0", id: 41, method: "unsubscribe", params: { query: "tm.event='Tx'" } });
      assert.deepEqual(await s.next((m) => m.id === 41 && !m.result?.query), {
        jsonrpc: "2.0",
        id: 41,
        result: {},
      });
      await rpc(dn.rpc, "broadcast_tx_commit", { tx: sendTx() });
      await s.next((m) => m.id === 43 && m.result?.query);
      assert.equal(
        s.inbox.filter((m) => m.id === 41 || m.id === 42).length,
        0,
        "no pushes after unsubscribe; filter 42 never matched",
      );
      s.send({ jsonrpc: "2.0", id: 41, method: "subscribe", params: { query: "tm.event='Tx'" } });
      assert.deepEqual(await s.next((m) => m.id === 41 && !m.result?.query), {
        jsonrpc: "2.0",
        id: 41,
        result: {},
      });
      await rpc(dn.rpc, "broadcast_tx_commit", { tx: sendTx() });
      assert.equal(
        (await s.next((m) => m.id === 41 && m.result?.query)).result.query,
        "tm.event='Tx'",
        "re-subscribed with the same id",
      );
      s.send("{garbage");
      assert.equal((await s.next((m) => m.error?.code === -32700)).error.message, "Parse error");
      s.send({ jsonrpc: "2.0", id: 45, method: "subscribe", params: { query: "tm.event=" } });
      assert.equal((await s.next((m) => m.id === 45)).error.code, -32603);
    } finally {
      s.ws.close();
    }
  });

  it("check_tx checks without keeping; broadcast_tx_async answers at once; bad base64 is refused", async () => {
    const tx = sendTx();
    const checked = (await rpc(dn.rpc, "check_tx", { tx })).result;
    assert.equal(checked.code, 0);
    assert.equal(typeof checked.gas_used, "string");
    assert.equal((await rpc(dn.rpc, "num_unconfirmed_txs")).result.total, "0", "check_tx keeps nothing");
    const stale = (await rpc(dn.rpc, "check_tx", { tx: sendTx() })).result;
    assert.equal(stale.code, 32, "the sequence did not move for the checked tx");
    seq -= 1n;
    const async = (await rpc(dn.rpc, "broadcast_tx_async", { tx })).result;
    assert.deepEqual(Object.keys(async).sort(), ["code", "codespace", "data", "hash", "log"]);
    assert.equal(async.code, 0);
    for (const m of ["broadcast_tx_sync", "broadcast_tx_async", "broadcast_tx_commit", "check_tx"]) {
      const bad = await rpc(dn.rpc, m, { tx: "***" });
      assert.equal(bad.error.code, -32602, m);
      const missing = await rpc(dn.rpc, m, {});
      assert.equal(missing.error.code, -32602, m);
    }
  });

  it("websocket frames over the size limit close the connection", async () => {
    assert.deepEqual(await oversizeFrameAnswer(dn.wsUrl, 2_100_000), { opcode: 8, code: 1009 });
    assert.deepEqual((await rpc(dn.rpc, "health")).result, {});
  });

  it("control methods: pause, produce on demand, advance time, resume", async () => {
    assert.equal((await rpc(dn.rpc, "devnet_pause")).result.paused, true);
    const h0 = Number((await rpc(dn.rpc, "status")).result.sync_info.latest_block_height);
    const sync = await rpc(dn.rpc, "broadcast_tx_sync", { tx: sendTx() });
    assert.equal(sync.result.code, 0);
    assert.equal((await rpc(dn.rpc, "num_unconfirmed_txs")).result.total, "1", "paused: the tx waits");
    const t0 = Date.parse((await rpc(dn.rpc, "block")).result.block.header.time);
    const adv = await rpc(dn.rpc, "devnet_advance_time", { seconds: 3600 });
    assert.equal(adv.error, undefined);
    const produced = await rpc(dn.rpc, "devnet_produce_block");
    assert.equal(produced.result.height, String(h0 + 1));
    const b = (await rpc(dn.rpc, "block", { height: produced.result.height })).result;
    assert.equal(b.block.data.txs.length, 1);
    assert.ok(Date.parse(b.block.header.time) - t0 >= 3_600_000, "block time jumped forward");
    const bad = await rpc(dn.rpc, "devnet_advance_time", { seconds: -5 });
    assert.equal(bad.error.code, -32602);
    await rpc(dn.rpc, "devnet_resume");
    await rpc(dn.rpc, "broadcast_tx_sync", { tx: sendTx() });
    await until(
      async () => Number((await rpc(dn.rpc, "status")).result.sync_info.latest_block_height) > h0 + 1,
      `a block above height ${h0 + 1} after resume`,
      { timeoutMs: 20_000, intervalMs: 50 },
    );
  });
});
