/**
 * The node connection's ABCI query transport against real HTTP servers on 127.0.0.1 that
 * answer the way a broken, slow or strict node would: every failure becomes the FredError a
 * caller can act on (unreachable is retryable ERR_CHAIN_UNAVAILABLE, a hang past the deadline
 * retryable ERR_CHAIN_RPC_TIMEOUT, NotFound is `undefined`, a reply off the protocol is
 * ERR_CHAIN_QUERY), and the caller's signal cancels a request.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { getLease } from "../../src/chain/cosmos/queries.ts";
import { connectNode } from "../../src/chain/cosmos/rpc.ts";
import { Lease, QueryLeaseResponse, toBytes } from "../../src/chain/proto/index.ts";
import { ManualClock } from "../../src/core/clock.ts";
import { isFredError } from "../../src/core/errors.ts";

const LEASE = "01900000-0000-7000-8000-000000000001";

type Handler = (body: { method: string; params: Record<string, unknown> }, res: ServerResponse) => void;

async function node(handler: Handler): Promise<{ url: string; server: Server; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.on("data", (c) => {
      text += c;
    });
    req.on("end", () => {
      const body = JSON.parse(text);
      seen.push(`${req.method} ${req.url} ${body.method} ${body.params.path}`);
      handler(body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen };
}

const reply = (res: ServerResponse, response: Record<string, unknown>) =>
  res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { response } }));

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function failure(url: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}) {
  const conn = await connectNode(url, opts.timeoutMs ?? 5_000);
  try {
    return await getLease(conn, LEASE, opts.signal).then(
      (v) => ({ value: v }),
      (err: unknown) => ({ err }),
    );
  } finally {
    conn.close();
  }
}

describe("chain node connection: ABCI queries over JSON-RPC", () => {
  it("posts abci_query with hex data to the URL's path and decodes the base64 value", async () => {
    const lease = Lease.fromPartial({ uuid: LEASE, state: 2, metaHash: new Uint8Array([1, 2]) });
    const n = await node((body, res) => {
      assert.equal(body.params.prove, false);
      assert.match(String(body.params.data), /^[0-9a-f]+$/);
      reply(res, {
        code: 0,
        height: "7",
        value: Buffer.from(toBytes(QueryLeaseResponse, { lease })).toString("base64"),
      });
    });
    servers.push(n.server);
    const got = await failure(`${n.url}/rpc`);
    assert.ok("value" in got);
    assert.equal(got.value?.uuid, LEASE);
    assert.equal(got.value?.state, "LEASE_STATE_ACTIVE");
    assert.equal(got.value?.metaHash, "0102");
    assert.deepEqual(n.seen, ["POST /rpc abci_query /liftedinit.billing.v1.Query/Lease"]);
  });

  it("a NotFound code is undefined; any other code is ERR_CHAIN_QUERY with the node's log", async () => {
    let code = 5;
    const n = await node((_b, res) =>
      reply(res, {
        code,
        height: "7",
        log: code === 5 ? "rpc error: code = NotFound desc = no lease" : "boom",
      }),
    );
    servers.push(n.server);
    assert.deepEqual(await failure(n.url), { value: undefined });
    code = 13;
    const { err } = (await failure(n.url)) as { err: unknown };
    assert.ok(isFredError(err, "ERR_CHAIN_QUERY"), String(err));
    assert.match(String(err.message), /boom/);
  });

  it("replies off the protocol are ERR_CHAIN_QUERY: a JSON-RPC error, no response, no height, bad value", async () => {
    const bodies = [
      JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error" } }),
      JSON.stringify({ jsonrpc: "2.0", id: 1, result: {} }),
      JSON.stringify({ jsonrpc: "2.0", id: 1, result: { response: { code: 0, value: "" } } }),
      JSON.stringify({ jsonrpc: "2.0", id: 1, result: { response: { code: 0, height: "1", value: 42 } } }),
      "not json",
    ];
    let i = 0;
    const n = await node((_b, res) => res.end(bodies[i++]));
    servers.push(n.server);
    for (const _ of bodies) {
      const got = await failure(n.url);
      assert.ok(
        "err" in got && isFredError(got.err, "ERR_CHAIN_QUERY"),
        `reply ${i}: ${JSON.stringify(got)}`,
      );
    }
  });

  it("unreachable, 5xx and a reset are retryable ERR_CHAIN_UNAVAILABLE", async () => {
    const closed = await node(() => {});
    await new Promise((r) => closed.server.close(r));
    const status = await node((_b, res) => {
      res.statusCode = 503;
      res.end("busy");
    });
    const reset = await node((_b, res) => res.socket?.destroy());
    servers.push(status.server, reset.server);
    for (const url of [closed.url, status.url, reset.url]) {
      const got = await failure(url);
      assert.ok("err" in got && isFredError(got.err, "ERR_CHAIN_UNAVAILABLE"), `${url}: ${String(got)}`);
      assert.equal((got.err as { retryable?: boolean }).retryable, true);
    }
    // A 4xx is the node refusing this request, not the node being away.
    const refused = await node((_b, res) => {
      res.statusCode = 400;
      res.end("bad");
    });
    servers.push(refused.server);
    const got = await failure(refused.url);
    assert.ok("err" in got && isFredError(got.err, "ERR_CHAIN_QUERY"));
  });

  it("a node that hangs past the deadline on the injected clock is retryable ERR_CHAIN_RPC_TIMEOUT", async () => {
    let arrived!: () => void;
    const seen = new Promise<void>((r) => {
      arrived = r;
    });
    const hang = await node(() => arrived());
    servers.push(hang.server);
    const clock = new ManualClock(0);
    const conn = await connectNode(hang.url, 200, clock);
    try {
      let settled = false;
      const pending = getLease(conn, LEASE).finally(() => {
        settled = true;
      });
      pending.catch(() => {});
      await seen;
      clock.advance(199);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(settled, false, "still waiting 1 ms before the deadline");
      clock.advance(1);
      await assert.rejects(pending, (err) => {
        assert.ok(isFredError(err, "ERR_CHAIN_RPC_TIMEOUT"), String(err));
        assert.equal(err.retryable, true);
        return true;
      });
    } finally {
      conn.close();
    }
  });

  it("the caller's signal cancels a request in flight", async () => {
    let arrived!: () => void;
    const seen = new Promise<void>((r) => {
      arrived = r;
    });
    const hang = await node(() => arrived());
    servers.push(hang.server);
    const ac = new AbortController();
    const pending = failure(hang.url, { timeoutMs: 60_000, signal: ac.signal });
    await seen;
    ac.abort();
    const got = await pending;
    assert.ok("err" in got, "the request was cancelled, not answered");
  });

  it("at most 16 queries reach the node at once; the rest wait in the pool and are all answered", async () => {
    // The one bound on ABCI queries at once (providerd's burst of single lease reads relies on it).
    let open = 0;
    let most = 0;
    const held: ServerResponse[] = [];
    const n = await node((_b, res) => {
      open++;
      most = Math.max(most, open);
      held.push(res);
    });
    servers.push(n.server);
    const conn = await connectNode(n.url, 60_000);
    try {
      const reads = Promise.all(Array.from({ length: 100 }, () => getLease(conn, LEASE)));
      let answered = 0;
      while (answered < 100) {
        await new Promise((r) => setTimeout(r, 5));
        for (const res of held.splice(0)) {
          open--;
          answered++;
          reply(res, { code: 5, height: "7", log: "rpc error: code = NotFound desc = no lease" });
        }
      }
      assert.deepEqual(await reads, Array(100).fill(undefined));
      assert.equal(most, 16);
    } finally {
      conn.close();
    }
  });
});

describe("chain node connection: status, broadcast, the tx index and block results", () => {
  const STATUS = {
    node_info: { network: "fred-devnet-1", id: "ab", moniker: "n" },
    sync_info: { latest_block_height: "42", latest_block_time: "2026-12-05T10:00:00.123456789Z" },
  };
  const TX = {
    hash: "AB",
    height: "9",
    index: 0,
    tx: "eA==",
    tx_result: { code: 0, data: Buffer.from([1, 2]).toString("base64"), gas_wanted: "200", gas_used: "150" },
  };

  /** A node answering each method with `results[method]` (a result, or a full reply when it has `error`). */
  async function nodeOf(results: Record<string, unknown>) {
    const calls: { method: string; params: Record<string, unknown> }[] = [];
    const n = await node((body, res) => {
      calls.push({ method: body.method, params: body.params });
      const r = results[body.method] as { error?: unknown } | undefined;
      res.end(
        JSON.stringify(
          r?.error !== undefined ? { jsonrpc: "2.0", id: 1, ...r } : { jsonrpc: "2.0", id: 1, result: r },
        ),
      );
    });
    servers.push(n.server);
    return { conn: await connectNode(`${n.url}/rpc`, 5_000), calls };
  }

  it("sends cosmjs's params and reads what the chain client uses", async () => {
    const { conn, calls } = await nodeOf({
      status: STATUS,
      broadcast_tx_sync: { code: 32, codespace: "sdk", log: "account sequence mismatch", hash: "AB" },
      tx_search: { txs: [TX], total_count: "1" },
      block_results: { height: "7", finalize_block_events: [{ type: "lease_expired", attributes: [] }] },
    });
    try {
      assert.deepEqual(await conn.status(), {
        network: "fred-devnet-1",
        latestBlockHeight: 42,
        latestBlockTime: new Date("2026-12-05T10:00:00.123Z"),
      });
      assert.deepEqual(await conn.broadcastTxSync(new Uint8Array([0x78])), {
        code: 32,
        codespace: "sdk",
        log: "account sequence mismatch",
      });
      assert.deepEqual(await conn.findTx("AB"), {
        height: 9,
        code: 0,
        codespace: "",
        log: "",
        gasWanted: 200n,
        gasUsed: 150n,
        data: Buffer.from([1, 2]),
      });
      assert.deepEqual(await conn.blockEvents(7), [{ type: "lease_expired", attributes: [] }]);
      assert.deepEqual(calls, [
        { method: "status", params: {} },
        { method: "broadcast_tx_sync", params: { tx: "eA==" } },
        { method: "tx_search", params: { query: "tx.hash='AB'" } },
        { method: "block_results", params: { height: "7" } },
      ]);
    } finally {
      conn.close();
    }
  });

  it("a tx not indexed yet is undefined; a block without events is an empty list", async () => {
    const { conn } = await nodeOf({
      tx_search: { txs: [], total_count: "0" },
      block_results: { height: "7" },
    });
    try {
      assert.equal(await conn.findTx("AB"), undefined);
      assert.deepEqual(await conn.blockEvents(7), []);
    } finally {
      conn.close();
    }
  });

  it("results off the protocol are retryable ERR_CHAIN_QUERY naming the field", async () => {
    const cases: [
      string,
      unknown,
      (c: Awaited<ReturnType<typeof nodeOf>>["conn"]) => Promise<unknown>,
      RegExp,
    ][] = [
      ["status", { node_info: {}, sync_info: STATUS.sync_info }, (c) => c.status(), /network/],
      [
        "status",
        { ...STATUS, sync_info: { latest_block_height: "42", latest_block_time: "soon" } },
        (c) => c.status(),
        /latest_block_time/,
      ],
      [
        "status",
        { ...STATUS, sync_info: { ...STATUS.sync_info, latest_block_height: "-1" } },
        (c) => c.status(),
        /latest_block_height/,
      ],
      ["broadcast_tx_sync", { code: "0" }, (c) => c.broadcastTxSync(new Uint8Array(1)), /code/],
      ["broadcast_tx_sync", null, (c) => c.broadcastTxSync(new Uint8Array(1)), /result/],
      ["tx_search", { txs: "none" }, (c) => c.findTx("AB"), /txs/],
      [
        "tx_search",
        { txs: [{ ...TX, tx_result: { ...TX.tx_result, gas_used: 150 } }] },
        (c) => c.findTx("AB"),
        /gas_used/,
      ],
      ["tx_search", { txs: [{ ...TX, height: 9 }] }, (c) => c.findTx("AB"), /height/],
      ["tx_search", { txs: [{ ...TX, tx_result: undefined }] }, (c) => c.findTx("AB"), /tx_result/],
      [
        "tx_search",
        { txs: [{ ...TX, tx_result: { ...TX.tx_result, data: 5 } }] },
        (c) => c.findTx("AB"),
        /data/,
      ],
      [
        "tx_search",
        { txs: [{ ...TX, tx_result: { ...TX.tx_result, codespace: 7 } }] },
        (c) => c.findTx("AB"),
        /codespace/,
      ],
      ["broadcast_tx_sync", { code: 3, log: ["x"] }, (c) => c.broadcastTxSync(new Uint8Array(1)), /log/],
      ["status", { node_info: STATUS.node_info }, (c) => c.status(), /sync_info/],
      ["block_results", { finalize_block_events: {} }, (c) => c.blockEvents(1), /finalize_block_events/],
    ];
    for (const [method, result, call, field] of cases) {
      const { conn } = await nodeOf({ [method]: result });
      try {
        await assert.rejects(call(conn), (err) => {
          assert.ok(isFredError(err, "ERR_CHAIN_QUERY"), `${method}: ${String(err)}`);
          assert.equal(err.retryable, true);
          assert.match(err.message, field);
          return true;
        });
      } finally {
        conn.close();
      }
    }
  });

  it("a JSON-RPC error is thrown in cosmjs's words, which the tx path classifies", async () => {
    const error = { code: -32603, message: "Internal error", data: "tx already exists in cache" };
    const { conn } = await nodeOf({ broadcast_tx_sync: { error } });
    try {
      await assert.rejects(conn.broadcastTxSync(new Uint8Array(1)), (err: Error) => {
        assert.equal(err.message, JSON.stringify(error));
        return true;
      });
    } finally {
      conn.close();
    }
  });
});
