/**
 * Devnet node throughput: signed MsgSend txs per second through broadcast_tx_sync into
 * committed blocks, and the commit time of one block holding 5,000 txs. Runs a real
 * `fred devnet start` process and prints one JSON line per figure (the JSON-RPC calls go
 * over the node's websocket endpoint; BENCH_TRANSPORT=http sends them by HTTP POST).
 */
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { Agent, fetch as undiciFetch } from "undici";
import WebSocket from "ws";
import { buildSignedTx } from "../src/devnet/tx/build.ts";
import { devnet } from "../test/support/index.ts";

const SENDERS = 50;
const THROUGHPUT_TXS = Number(process.env.BENCH_TXS ?? 5000);
const BLOCK_TXS = 5000;
const TRANSPORT = process.env.BENCH_TRANSPORT === "http" ? "http" : "websocket";

interface RpcReply {
  error?: unknown;
  result: { code: number };
}

const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
let id = 0;
// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies, read field by field.
async function call(url: string, method: string, params: unknown): Promise<any> {
  const res = await undiciFetch(url, {
    method: "POST",
    dispatcher,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
  });
  return res.json();
}

const dn = await devnet({ tenants: SENDERS });
try {
  const chainId = dn.keys.chain_id;
  const senders = dn.keys.accounts.filter((a) => a.name.startsWith("tenant"));
  const sink = dn.account("faucet").address;
  const accountNumbers = senders.map((_, i) => BigInt(i + 1)); // provider is 0, tenants follow
  const sequences = senders.map(() => 0n);

  const sign = (count: number): Uint8Array[][] => {
    const perSender: Uint8Array[][] = senders.map(() => []);
    for (let n = 0; n < count; n++) {
      const i = n % senders.length;
      const s = senders[i] as (typeof senders)[number];
      const msg = MsgSend.encode({
        fromAddress: s.address,
        toAddress: sink,
        amount: [{ denom: "umfx", amount: "1" }],
      });
      (perSender[i] as Uint8Array[]).push(
        buildSignedTx({
          chainId,
          messages: [{ typeUrl: "/cosmos.bank.v1beta1.MsgSend", value: msg.finish() }],
          signers: [
            {
              privateKey: Buffer.from(s.private_key_hex, "hex"),
              accountNumber: accountNumbers[i] as bigint,
              sequence: sequences[i] as bigint,
            },
          ],
          fee: { amount: [{ denom: "umfx", amount: "5" }], gasLimit: 150_000n },
        }),
      );
      sequences[i] = (sequences[i] as bigint) + 1n;
    }
    return perSender;
  };

  /**
   * Each sender sends its txs in order (a sequence must not overtake the previous one) over
   * its own websocket JSON-RPC connection: the same broadcast_tx_sync as over HTTP, with
   * far less client-side CPU per call (the client shares this machine's two cores).
   */
  const broadcastAll = async (perSender: Uint8Array[][]) => {
    let failed = 0;
    if (TRANSPORT === "http") {
      await Promise.all(
        perSender.map(async (txs) => {
          for (const tx of txs) {
            const r = await call(dn.rpc, "broadcast_tx_sync", { tx: Buffer.from(tx).toString("base64") });
            if (r.error || r.result.code !== 0) failed++;
          }
        }),
      );
      if (failed > 0) throw new Error(`${failed} broadcasts were refused`);
      return;
    }
    await Promise.all(
      perSender.map(async (txs) => {
        const ws = new WebSocket(`${dn.wsUrl}/websocket`);
        await new Promise((r, j) => {
          ws.once("open", r);
          ws.once("error", j);
        });
        let pending: ((m: RpcReply) => void) | undefined;
        ws.on("message", (raw) => pending?.(JSON.parse(String(raw))));
        for (const tx of txs) {
          const reply = await new Promise<RpcReply>((resolve) => {
            pending = resolve;
            ws.send(
              JSON.stringify({
                jsonrpc: "2.0",
                id: ++id,
                method: "broadcast_tx_sync",
                params: { tx: Buffer.from(tx).toString("base64") },
              }),
            );
          });
          if (reply.error || reply.result.code !== 0) failed++;
        }
        ws.close();
      }),
    );
    if (failed > 0) throw new Error(`${failed} broadcasts were refused`);
  };

  // 1. Throughput: txs/s from the first broadcast until the last tx is in a committed block.
  const batch = sign(THROUGHPUT_TXS);
  const ws = new WebSocket(`${dn.wsUrl}/websocket`);
  await new Promise((r) => ws.once("open", r));
  let committed = 0;
  let allIn: () => void = () => {};
  const done = new Promise<void>((r) => {
    allIn = r;
  });
  ws.on("message", (raw) => {
    const msg = JSON.parse(String(raw));
    const n = Number(msg.result?.data?.value?.num_txs ?? 0);
    committed += n;
    if (committed >= THROUGHPUT_TXS) allIn();
  });
  ws.send(
    JSON.stringify({
      jsonrpc: "2.0",
      id: "blocks",
      method: "subscribe",
      params: { query: "tm.event='NewBlockEvents'" },
    }),
  );
  await new Promise((r) => setTimeout(r, 200));
  const t0 = performance.now();
  await broadcastAll(batch);
  await done;
  const seconds = (performance.now() - t0) / 1000;
  ws.close();
  console.log(
    JSON.stringify({
      bench: "devnet_msgsend_throughput",
      txs: THROUGHPUT_TXS,
      senders: SENDERS,
      transport: TRANSPORT,
      seconds: Number(seconds.toFixed(3)),
      txs_per_second: Math.round(THROUGHPUT_TXS / seconds),
      goal_txs_per_second: 1000,
    }),
  );

  // 2. One block of 5,000 txs: pause production, fill the mempool, produce, time the commit.
  await call(dn.rpc, "devnet_pause", {});
  await broadcastAll(sign(BLOCK_TXS));
  const t1 = performance.now();
  const produced = await call(dn.rpc, "devnet_produce_block", {});
  const commitMs = performance.now() - t1;
  const height = produced.result.height;
  const block = await call(dn.rpc, "block", { height });
  const results = await call(dn.rpc, "block_results", { height });
  const ok = (results.result.txs_results ?? []).filter((r: { code: number }) => r.code === 0).length;
  console.log(
    JSON.stringify({
      bench: "devnet_block_commit",
      txs_in_block: block.result.block.data.txs?.length ?? 0,
      txs_ok: ok,
      commit_ms: Math.round(commitMs),
    }),
  );
} finally {
  await dn.stop();
  await dispatcher.close();
}
