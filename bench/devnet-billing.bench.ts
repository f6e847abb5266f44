/**
 * x/billing at scale on a real `fred devnet` (bench profile): the commit time of one block
 * holding 10,000 MsgCreateLease (goal ≤ 2 s), of the block acknowledging them, and the time
 * of each provider-wide MsgWithdraw page over the 10,000 ACTIVE leases. One JSON line per figure.
 * Besides wall time, block figures carry the node process's CPU time for the block (Linux
 * /proc), which stays meaningful when other work shares the machine.
 */
import { readFileSync } from "node:fs";
import { StargateClient } from "@cosmjs/stargate";
import { TxMsgData } from "cosmjs-types/cosmos/base/abci/v1beta1/abci";
import { Agent, fetch as undiciFetch } from "undici";
import {
  MsgAcknowledgeLease,
  MsgCreateLease,
  MsgCreateLeaseResponse,
  MsgWithdraw,
  MsgWithdrawResponse,
  toBytes,
} from "../src/chain/proto/index.ts";
import { buildSignedTx } from "../src/devnet/tx/build.ts";
import { devnet } from "../test/support/index.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 10_000);
const PER_TX = 100;
const TENANTS = Math.max(1, Math.ceil(LEASES / 1000)); // bench profile: 1000 pending leases per tenant
const WITHDRAW_LIMIT = 100n;

const dispatcher = new Agent({ connections: 16, keepAliveTimeout: 30_000 });
let id = 0;
// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC replies, read field by field.
async function call(url: string, method: string, params: unknown = {}): Promise<any> {
  const res = await undiciFetch(url, {
    method: "POST",
    dispatcher,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
  });
  const body = (await res.json()) as { error?: unknown; result?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

const dn = await devnet({ profile: "bench", tenants: TENANTS });
const stargate = await StargateClient.connect(dn.rpc);
try {
  const chainId = dn.keys.chain_id;
  const small = dn.keys.skus.find((s) => s.name === "docker-small")!.uuid;
  const signer = async (name: string) => {
    const a = dn.account(name);
    const acc = await stargate.getAccount(a.address);
    let sequence = acc!.sequence;
    return {
      address: a.address,
      next: (messages: { typeUrl: string; value: Uint8Array }[], gas: bigint) =>
        buildSignedTx({
          chainId,
          messages,
          signers: [
            {
              privateKey: Buffer.from(a.private_key_hex, "hex"),
              accountNumber: BigInt(acc!.accountNumber),
              sequence: BigInt(sequence++),
            },
          ],
          fee: { amount: [{ denom: "umfx", amount: String((gas * 25n) / 1_000_000n + 1n) }], gasLimit: gas },
        }),
    };
  };
  const broadcast = async (txs: Uint8Array[]) => {
    for (const tx of txs) {
      const r = await call(dn.rpc, "broadcast_tx_sync", { tx: Buffer.from(tx).toString("base64") });
      if (r.code !== 0) throw new Error(`CheckTx ${r.codespace}/${r.code}: ${r.log}`);
    }
  };
  /** CPU time (user + system, ms) the node process has used so far: robust on a busy machine. */
  const nodeCpuMs = () => {
    const fields = readFileSync(`/proc/${dn.proc.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime in 10 ms ticks
  };
  /** Produces one block from the mempool; returns its height, wall and CPU time, and the tx results. */
  const block = async () => {
    const cpu0 = nodeCpuMs();
    const t0 = performance.now();
    const { height } = await call(dn.rpc, "devnet_produce_block");
    const ms = performance.now() - t0;
    const cpuMs = nodeCpuMs() - cpu0;
    const results = await call(dn.rpc, "block_results", { height });
    // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC result
    const txs = (results.txs_results ?? []) as any[];
    const failed = txs.filter((t) => t.code !== 0);
    if (failed.length > 0) throw new Error(`${failed.length} txs failed: ${failed[0].log}`);
    return { height: Number(height), ms, cpuMs, txs };
  };

  await call(dn.rpc, "devnet_pause");
  // 1. One block with LEASES MsgCreateLease, PER_TX per tx, spread over the tenants.
  const creates: Uint8Array[] = [];
  for (let t = 1; t <= TENANTS; t++) {
    const s = await signer(`tenant${t}`);
    const mine = Math.min(1000, LEASES - (t - 1) * 1000);
    for (let done = 0; done < mine; done += PER_TX) {
      const n = Math.min(PER_TX, mine - done);
      const msgs = Array.from({ length: n }, () => ({
        typeUrl: MsgCreateLease.typeUrl,
        value: toBytes(MsgCreateLease, {
          tenant: s.address,
          items: [{ skuUuid: small, quantity: 1n, serviceName: "" }],
          metaHash: new Uint8Array(),
        }),
      }));
      creates.push(s.next(msgs, BigInt(n) * 300_000n));
    }
  }
  await broadcast(creates);
  const created = await block();
  const uuids = created.txs.flatMap((t) =>
    TxMsgData.decode(Buffer.from(t.data, "base64")).msgResponses.map(
      (r) => MsgCreateLeaseResponse.decode(r.value).leaseUuid,
    ),
  );
  if (uuids.length !== LEASES) throw new Error(`expected ${LEASES} leases, got ${uuids.length}`);
  console.log(
    JSON.stringify({
      bench: "devnet_billing_create_block",
      leases: LEASES,
      txs: creates.length,
      commit_ms: Math.round(created.ms),
      node_cpu_ms: created.cpuMs,
      goal_ms: 2000,
    }),
  );

  // 2. One block acknowledging all of them (batches of 100 per Msg, one Msg per tx).
  const provider = await signer("provider");
  const acks: Uint8Array[] = [];
  for (let i = 0; i < uuids.length; i += 100) {
    const value = toBytes(MsgAcknowledgeLease, {
      sender: provider.address,
      leaseUuids: uuids.slice(i, i + 100),
    });
    acks.push(provider.next([{ typeUrl: MsgAcknowledgeLease.typeUrl, value }], 6_000_000n));
  }
  await broadcast(acks);
  const acked = await block();
  console.log(
    JSON.stringify({
      bench: "devnet_billing_ack_block",
      leases: LEASES,
      txs: acks.length,
      commit_ms: Math.round(acked.ms),
      node_cpu_ms: acked.cpuMs,
    }),
  );

  // 3. Provider-wide withdraw over every ACTIVE lease, one page (limit 100) per block.
  await call(dn.rpc, "devnet_advance_time", { seconds: 60 });
  const pageMs: number[] = [];
  const pageCpu: number[] = [];
  let key: Uint8Array = new Uint8Array();
  let withdrawn = 0n;
  for (;;) {
    const value = toBytes(MsgWithdraw, {
      sender: provider.address,
      leaseUuids: [],
      providerUuid: dn.keys.provider_uuid,
      limit: WITHDRAW_LIMIT,
      key,
    });
    await broadcast([provider.next([{ typeUrl: MsgWithdraw.typeUrl, value }], 30_000_000n)]);
    const page = await block();
    pageMs.push(page.ms);
    pageCpu.push(page.cpuMs);
    const out = MsgWithdrawResponse.decode(
      TxMsgData.decode(Buffer.from(page.txs[0].data, "base64")).msgResponses[0]!.value,
    );
    withdrawn += out.withdrawalCount;
    if (!out.hasMore) break;
    key = out.nextKey;
  }
  if (withdrawn !== BigInt(LEASES)) throw new Error(`withdrew ${withdrawn} of ${LEASES} leases`);
  const sorted = [...pageMs].sort((a, b) => a - b);
  const mean = pageMs.reduce((a, b) => a + b, 0) / pageMs.length;
  console.log(
    JSON.stringify({
      bench: "devnet_billing_withdraw_page",
      active_leases: LEASES,
      page_limit: Number(WITHDRAW_LIMIT),
      pages: pageMs.length,
      mean_ms: Math.round(mean * 10) / 10,
      p50_ms: Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10,
      max_ms: Math.round(sorted[sorted.length - 1]! * 10) / 10,
      node_cpu_mean_ms: Math.round((pageCpu.reduce((a, b) => a + b, 0) / pageCpu.length) * 10) / 10,
    }),
  );
} finally {
  stargate.disconnect();
  await dispatcher.close();
  await dn.stop();
}
