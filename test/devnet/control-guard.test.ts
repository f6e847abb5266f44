/**
 * The devnet_* control methods answer only a JSON-RPC POST with Content-Type application/json
 * from this machine: the requests a web page in a browser can make without a CORS preflight
 * (a GET, a text/plain or form POST, a websocket frame), a DNS-rebinding page (foreign Host)
 * and a cross-origin POST (foreign Origin) are refused, and the chain is not touched. A real
 * `fred devnet start` process; cosmjs proves blocks still come.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, it } from "node:test";
import { DirectSecp256k1HdWallet } from "@cosmjs/proto-signing";
import { assertIsDeliverTxSuccess, GasPrice, SigningStargateClient } from "@cosmjs/stargate";
import { Comet38Client } from "@cosmjs/tendermint-rpc";
import WebSocket from "ws";
import { type Devnet, devnet, until } from "../support/index.ts";
import { rpc, stopCosmjsReconnectsAfterDisconnect } from "./helpers.ts";

stopCosmjsReconnectsAfterDisconnect();

const REFUSED =
  "devnet_* methods are accepted only as a JSON-RPC POST with Content-Type: application/json from this machine";

function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  // biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC reply, asserted field by field.
): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => {
        text += d;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const call = (method: string, params: unknown = {}) =>
  JSON.stringify({ jsonrpc: "2.0", id: 7, method, params });

describe("devnet control methods refuse what a web page can send", () => {
  let dn: Devnet;
  let signer: SigningStargateClient;
  let comet: Comet38Client;
  let tenant1: string;
  let tenant2: string;

  before(async () => {
    dn = await devnet();
    tenant1 = dn.account("tenant1").address;
    tenant2 = dn.account("tenant2").address;
    const wallet = await DirectSecp256k1HdWallet.fromMnemonic(dn.account("tenant1").mnemonic, {
      prefix: "manifest",
    });
    signer = await SigningStargateClient.connectWithSigner(dn.rpc, wallet, {
      gasPrice: GasPrice.fromString("0.025umfx"),
      broadcastPollIntervalMs: 100,
      broadcastTimeoutMs: 20_000,
    });
    comet = await Comet38Client.connect(dn.rpc);
  });

  after(async () => {
    signer?.disconnect();
    comet?.disconnect();
    await dn?.stop();
  });

  async function assertChainUntouched(): Promise<void> {
    const before = (await comet.block()).block.header.time.getTime();
    const res = await signer.sendTokens(tenant1, tenant2, [{ denom: "umfx", amount: "1" }], "auto");
    assertIsDeliverTxSuccess(res);
    const block = await comet.block(res.height);
    assert.ok(
      block.block.header.time.getTime() - before < 3_600_000,
      "the next block time did not jump forward",
    );
  }

  it("refuses the URI (GET) form of every control method", async () => {
    const host = new URL(dn.rpc).host;
    for (const path of ["/devnet_pause", "/devnet_advance_time?seconds=3600", "/devnet_produce_block"]) {
      const res = await fetch(`http://${host}${path}`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as { error: unknown };
      assert.deepEqual(body.error, { code: -32601, message: "Method not found", data: REFUSED }, path);
    }
    await assertChainUntouched();
  });

  it("refuses simple (no-preflight) POSTs: text/plain, form, and no content type", async () => {
    for (const type of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded"]) {
      const res = await post(dn.rpc, call("devnet_advance_time", { seconds: 3600 }), {
        "content-type": type,
      });
      assert.equal(res.json.error.code, -32601, type);
      assert.equal(res.json.error.data, REFUSED, type);
    }
    const bare = await post(dn.rpc, call("devnet_pause"), {});
    assert.equal(bare.json.error.code, -32601);
    // Ordinary methods keep answering whatever the content type, as on CometBFT.
    const status = await post(dn.rpc, call("status"), { "content-type": "text/plain" });
    assert.equal(status.json.result.node_info.network, "fred-devnet-1");
    await assertChainUntouched();
  });

  it("refuses a JSON POST naming a foreign Host (DNS rebinding) or a foreign Origin", async () => {
    const rebound = await post(dn.rpc, call("devnet_pause"), {
      "content-type": "application/json",
      host: "attacker.example:26657",
    });
    assert.equal(rebound.json.error.data, REFUSED);
    const crossOrigin = await post(dn.rpc, call("devnet_pause"), {
      "content-type": "application/json",
      origin: "https://attacker.example",
    });
    assert.equal(crossOrigin.json.error.data, REFUSED);
    await assertChainUntouched();
  });

  it("refuses control methods in websocket frames", async () => {
    const ws = new WebSocket(`${dn.wsUrl}/websocket`);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const reply = new Promise<{ error: { code: number; data: string } }>((resolve) =>
      ws.once("message", (d) => resolve(JSON.parse(d.toString()))),
    );
    ws.send(call("devnet_pause"));
    const got = await reply;
    ws.close();
    assert.equal(got.error.code, -32601);
    assert.equal(got.error.data, REFUSED);
    await assertChainUntouched();
  });

  it("still serves a JSON POST from this machine, with or without a loopback Origin", async () => {
    const paused = await post(dn.rpc, call("devnet_pause"), {
      "content-type": "application/json; charset=utf-8",
      origin: dn.rpc,
    });
    assert.equal(paused.json.result.paused, true);
    const sync = await signer.signAndBroadcastSync(
      tenant1,
      [
        {
          typeUrl: "/cosmos.bank.v1beta1.MsgSend",
          value: { fromAddress: tenant1, toAddress: tenant2, amount: [{ denom: "umfx", amount: "1" }] },
        },
      ],
      "auto",
    );
    assert.match(sync, /^[0-9A-F]{64}$/);
    assert.equal((await rpc(dn.rpc, "num_unconfirmed_txs")).result.total, "1", "paused: the tx waits");
    assert.equal((await rpc(dn.rpc, "devnet_resume")).result.paused, false);
    const included = await until(() => signer.getTx(sync), "the tx to be included after the resume", {
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    assert.equal(included.code, 0);
  });
});
