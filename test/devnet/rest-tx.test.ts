/**
 * The tx service over the devnet's REST endpoint: a tx signed with cosmjs and broadcast with
 * POST /cosmos/tx/v1beta1/txs lands in a block and is found by hash over the CometBFT RPC
 * (`tx`) and over REST (GET /txs/{hash}, GET /txs?query=… and the older `events=`), in the
 * gateway's JSON; simulate answers gas and the message responses; bad bodies get the
 * gateway's error shape.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { type Chain, FEE, startChain } from "./modules/harness.ts";

// biome-ignore lint/suspicious/noExplicitAny: gateway replies are arbitrary JSON, asserted field by field.
type Json = any;

let chain: Chain;
let rest: string;
let t1: string;
let t2: string;

async function post(path: string, body: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(rest + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function get(path: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(rest + path);
  return { status: res.status, body: await res.json() };
}

/** A MsgSend of `amount` umfx from tenant1 to tenant2, signed for tenant1's next sequence. */
async function signedSend(amount: string, sequenceOffset = 0): Promise<Uint8Array> {
  const client = await chain.client("tenant1");
  const { accountNumber, sequence } = await client.getSequence(t1);
  const raw = await client.sign(
    t1,
    [
      {
        typeUrl: "/cosmos.bank.v1beta1.MsgSend",
        value: MsgSend.fromPartial({ fromAddress: t1, toAddress: t2, amount: [{ denom: "umfx", amount }] }),
      },
    ],
    FEE,
    "over rest",
    { accountNumber, sequence: sequence + sequenceOffset, chainId: chain.devnet.keys.chain_id },
  );
  return TxRaw.encode(raw).finish();
}

const hashOf = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex").toUpperCase();

/** The RPC `tx` answer once the tx is in a block (bounded polling: each try is one RPC call). */
async function committed(hash: string): Promise<Json> {
  for (let attempt = 0; attempt < 400; attempt++) {
    try {
      return await chain.devnet.call("tx", { hash: Buffer.from(hash, "hex").toString("base64") });
    } catch (err) {
      if (!String(err).includes("not found")) throw err;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`tx ${hash} was never committed`);
}

before(async () => {
  chain = await startChain({ args: ["--rest-port", "0"], checkEveryBlock: false });
  rest = (chain.devnet.proc.ready as unknown as { rest: string }).rest;
  t1 = chain.address("tenant1");
  t2 = chain.address("tenant2");
});
after(() => chain.stop());

describe("POST /cosmos/tx/v1beta1/txs", () => {
  it("broadcasts in sync mode: the tx lands in a block and is found by hash over RPC and REST", async () => {
    const before2 = (await chain.query.bank.balance(t2, "umfx")).amount;
    const bytes = await signedSend("1234");
    const hash = hashOf(bytes);
    const res = await post("/cosmos/tx/v1beta1/txs", {
      tx_bytes: Buffer.from(bytes).toString("base64"),
      mode: "BROADCAST_MODE_SYNC",
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      tx_response: {
        height: "0",
        txhash: hash,
        codespace: "",
        code: 0,
        data: "",
        raw_log: "",
        logs: [],
        info: "",
        gas_wanted: "0",
        gas_used: "0",
        tx: null,
        timestamp: "",
        events: [],
      },
    });

    const viaRpc = await committed(hash);
    assert.equal(viaRpc.hash, hash);
    assert.equal(viaRpc.tx_result.code, 0);
    assert.equal((await chain.query.bank.balance(t2, "umfx")).amount, String(BigInt(before2) + 1234n));

    const { status, body } = await get(`/cosmos/tx/v1beta1/txs/${hash}`);
    assert.equal(status, 200);
    assert.deepEqual(Object.keys(body), ["tx", "tx_response"]);
    assert.deepEqual(body.tx.body.messages, [
      {
        "@type": "/cosmos.bank.v1beta1.MsgSend",
        from_address: t1,
        to_address: t2,
        amount: [{ denom: "umfx", amount: "1234" }],
      },
    ]);
    assert.equal(body.tx.body.memo, "over rest");
    assert.equal(body.tx.body.timeout_height, "0");
    const signer = body.tx.auth_info.signer_infos[0];
    assert.deepEqual(signer.mode_info, { single: { mode: "SIGN_MODE_DIRECT" } });
    assert.equal(signer.public_key["@type"], "/cosmos.crypto.secp256k1.PubKey");
    assert.deepEqual(body.tx.auth_info.fee.amount, FEE.amount);
    assert.equal(body.tx.auth_info.fee.gas_limit, FEE.gas);
    assert.equal(body.tx.signatures.length, 1);

    const r = body.tx_response;
    assert.equal(r.height, viaRpc.height);
    assert.equal(r.txhash, hash);
    assert.equal(r.code, 0);
    assert.equal(r.gas_wanted, viaRpc.tx_result.gas_wanted);
    assert.equal(r.gas_used, viaRpc.tx_result.gas_used);
    assert.equal(r.tx["@type"], "/cosmos.tx.v1beta1.Tx");
    assert.deepEqual(r.tx.body, body.tx.body);
    assert.match(r.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(r.events, viaRpc.tx_result.events);
  });

  it("finds the tx by events: the v0.50 `query` parameter and the older `events` ones", async () => {
    const bytes = await signedSend("77");
    const hash = hashOf(bytes);
    const res = await post("/cosmos/tx/v1beta1/txs", {
      tx_bytes: Buffer.from(bytes).toString("base64"),
      mode: "BROADCAST_MODE_SYNC",
    });
    assert.equal(res.body.tx_response.code, 0);
    const viaRpc = await committed(hash);

    const q = encodeURIComponent(`tx.height=${viaRpc.height} AND message.sender='${t1}'`);
    const byQuery = await get(`/cosmos/tx/v1beta1/txs?query=${q}`);
    assert.equal(byQuery.status, 200);
    assert.deepEqual(Object.keys(byQuery.body), ["txs", "tx_responses", "pagination", "total"]);
    assert.equal(byQuery.body.total, "1");
    assert.equal(byQuery.body.pagination, null);
    assert.equal(byQuery.body.tx_responses[0].txhash, hash);
    assert.deepEqual(byQuery.body.txs[0].body.messages[0].amount, [{ denom: "umfx", amount: "77" }]);

    const byEvents = await get(
      `/cosmos/tx/v1beta1/txs?events=${encodeURIComponent(`tx.height=${viaRpc.height}`)}&events=${encodeURIComponent(`message.sender='${t1}'`)}`,
    );
    assert.deepEqual(byEvents.body, byQuery.body);

    const all = await get(
      `/cosmos/tx/v1beta1/txs?query=${encodeURIComponent(`message.sender='${t1}'`)}&order_by=ORDER_BY_DESC&limit=1`,
    );
    assert.equal(all.body.tx_responses.length, 1);
    assert.equal(all.body.tx_responses[0].txhash, hash, "newest first");
    assert.ok(Number(all.body.total) >= 2);

    const missing = await get("/cosmos/tx/v1beta1/txs");
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body, { code: 3, message: "query cannot be empty", details: [] });
  });

  it("broadcasts in async mode and answers only the hash", async () => {
    const bytes = await signedSend("5");
    const hash = hashOf(bytes);
    const res = await post("/cosmos/tx/v1beta1/txs", {
      tx_bytes: Buffer.from(bytes).toString("base64"),
      mode: "BROADCAST_MODE_ASYNC",
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.tx_response.txhash, hash);
    assert.equal(res.body.tx_response.code, 0);
    assert.equal((await committed(hash)).tx_result.code, 0);
  });

  it("reports CheckTx refusals and a repeated tx in the TxResponse, as the SDK does", async () => {
    const bytes = await signedSend("9");
    const body = { tx_bytes: Buffer.from(bytes).toString("base64"), mode: "BROADCAST_MODE_SYNC" };
    assert.equal((await post("/cosmos/tx/v1beta1/txs", body)).body.tx_response.code, 0);
    const again = await post("/cosmos/tx/v1beta1/txs", body);
    assert.equal(again.status, 200);
    assert.equal(again.body.tx_response.code, 19);
    assert.equal(again.body.tx_response.codespace, "sdk");
    assert.equal(again.body.tx_response.txhash, hashOf(bytes));
    await committed(hashOf(bytes));

    // Signed for a sequence already used: CheckTx refuses it (sdk code 32, account sequence mismatch).
    const stale = await signedSend("10", -1);
    const refusedRes = await post("/cosmos/tx/v1beta1/txs", {
      tx_bytes: Buffer.from(stale).toString("base64"),
      mode: "BROADCAST_MODE_SYNC",
    });
    assert.equal(refusedRes.status, 200);
    assert.equal(refusedRes.body.tx_response.code, 32);
    assert.equal(refusedRes.body.tx_response.codespace, "sdk");
    assert.match(refusedRes.body.tx_response.raw_log, /account sequence mismatch/);

    const garbage = await post("/cosmos/tx/v1beta1/txs", { tx_bytes: "AAAA", mode: "BROADCAST_MODE_SYNC" });
    assert.equal(garbage.body.tx_response.code, 2);
    assert.match(garbage.body.tx_response.raw_log, /tx parse error/);
  });

  it("refuses a body without a tx, an unsupported mode, malformed JSON and bad base64", async () => {
    assert.deepEqual(await post("/cosmos/tx/v1beta1/txs", { mode: "BROADCAST_MODE_SYNC" }), {
      status: 400,
      body: { code: 3, message: "invalid empty tx", details: [] },
    });
    const bytes = Buffer.from(await signedSend("1")).toString("base64");
    for (const mode of ["BROADCAST_MODE_BLOCK", "BROADCAST_MODE_UNSPECIFIED"]) {
      const res = await post("/cosmos/tx/v1beta1/txs", { tx_bytes: bytes, mode });
      assert.equal(res.status, 500);
      assert.equal(res.body.code, 2);
      assert.match(res.body.message, /supported types: sync, async/);
    }
    const malformed = await post("/cosmos/tx/v1beta1/txs", "{not json");
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.code, 3);
    const badBase64 = await post("/cosmos/tx/v1beta1/txs", { tx_bytes: "***", mode: "BROADCAST_MODE_SYNC" });
    assert.equal(badBase64.status, 400);
    assert.match(badBase64.body.message, /base64/);
    const badMode = await post("/cosmos/tx/v1beta1/txs", { tx_bytes: bytes, mode: "SOON" });
    assert.equal(badMode.status, 400);
  });
});

describe("POST /cosmos/tx/v1beta1/simulate", () => {
  it("answers gas info and the message responses without changing state", async () => {
    const balance = (await chain.query.bank.balance(t2, "umfx")).amount;
    const bytes = await signedSend("100");
    const res = await post("/cosmos/tx/v1beta1/simulate", {
      tx_bytes: Buffer.from(bytes).toString("base64"),
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body), ["gas_info", "result"]);
    assert.equal(res.body.gas_info.gas_wanted, FEE.gas);
    assert.ok(Number(res.body.gas_info.gas_used) > 0);
    assert.deepEqual(res.body.result.msg_responses, [{ "@type": "/cosmos.bank.v1beta1.MsgSendResponse" }]);
    assert.ok(res.body.result.events.some((e: Json) => e.type === "transfer"));
    assert.equal((await chain.query.bank.balance(t2, "umfx")).amount, balance, "nothing was sent");
  });

  it("refuses an empty request and reports a failing tx as the SDK's simulate error", async () => {
    const empty = await post("/cosmos/tx/v1beta1/simulate", {});
    assert.equal(empty.status, 400);
    assert.deepEqual(empty.body, {
      code: 3,
      message: "empty txBytes is not allowed: invalid request",
      details: [],
    });
    const failing = await post("/cosmos/tx/v1beta1/simulate", { tx_bytes: "AAAA" });
    assert.equal(failing.status, 500);
    assert.equal(failing.body.code, 2);
    assert.match(failing.body.message, /With gas wanted/);
  });
});
