/**
 * Chain client benchmarks against a real `fred devnet` (bench genesis, 1 s blocks):
 *  1. acknowledge 10,000 PENDING leases through the ack batcher (goal ≤ 5 s), printing the
 *     batch settings, txs and blocks used;
 *  2. event-parse throughput on Tx frames recorded from the devnet's websocket while those
 *     leases were created (goal ≥ 50,000 events/s).
 * Env: BENCH_LEASES (default 10000), BENCH_UUIDS_PER_TX (1000), BENCH_LANES (10),
 * BENCH_SUB_SIGNERS (0: the provider key sends; N: N authz sub-signer lanes).
 */
import WebSocket from "ws";
import { type CosmosChain, openCosmosChain } from "../src/chain/cosmos/adapter.ts";
import { websocketUrlFor } from "../src/chain/cosmos/rpc.ts";
import { signerFromKey } from "../src/chain/cosmos/signer.ts";
import { deriveSubSigners } from "../src/chain/cosmos/sub-signers.ts";
import { classifyFrame, parseTxEventMap } from "../src/chain/events/parse.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../src/chain/proto/index.ts";
import { AckBatcher } from "../src/chain/tx/ack-batcher.ts";
import { systemClock } from "../src/core/clock.ts";
import { type Devnet, devnet } from "../test/support/index.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 10_000);
const UUIDS_PER_TX = Number(process.env.BENCH_UUIDS_PER_TX ?? 1000);
const LANES = Number(process.env.BENCH_LANES ?? 10);
const SUB_SIGNERS = Number(process.env.BENCH_SUB_SIGNERS ?? 0);
const PER_TENANT = 1000;
const TENANTS = Math.ceil(LEASES / PER_TENANT);

function line(value: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function client(dn: Devnet, name: string): Promise<CosmosChain> {
  const key = Buffer.from(dn.account(name).private_key_hex, "hex");
  return openCosmosChain({
    rpcUrl: dn.rpc,
    signer: signerFromKey(key),
    txPollIntervalMs: 100,
    txTimeoutMs: 120_000,
    msgsPerTx: UUIDS_PER_TX / 100,
    // BENCH_TRACE=1 prints the provider's tx progress with timestamps on stderr.
    ...(process.env.BENCH_TRACE && name === "provider"
      ? { onProgress: (l: string) => process.stderr.write(`${new Date().toISOString()} ${l}\n`) }
      : {}),
  });
}

async function recordFrames(dn: Devnet, query: string): Promise<{ frames: string[]; close: () => void }> {
  const ws = new WebSocket(websocketUrlFor(dn.rpc), { maxPayload: 64 * 1024 * 1024 });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  const frames: string[] = [];
  ws.on("message", (data) => {
    const text = String(data);
    if (text.includes('"query"')) frames.push(text);
  });
  ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "subscribe", params: { query } }));
  return { frames, close: () => ws.close() };
}

async function createAll(dn: Devnet): Promise<string[]> {
  const sku = dn.keys.skus.find((s) => s.name === "docker-small")?.uuid as string;
  const perTx = 100;
  const results = await Promise.all(
    Array.from({ length: TENANTS }, async (_, t) => {
      const c = await client(dn, `tenant${t + 1}`);
      const n = Math.min(PER_TENANT, LEASES - t * PER_TENANT);
      const txs = [];
      for (let i = 0; i < n; i += perTx) {
        const msgs = Array.from({ length: Math.min(perTx, n - i) }, () => ({
          typeUrl: MsgCreateLease.typeUrl,
          value: MsgCreateLease.fromPartial({ tenant: c.address, items: [{ skuUuid: sku, quantity: 1n }] }),
        }));
        txs.push(c.send(msgs));
      }
      const done = await Promise.all(txs);
      c.disconnect();
      return done.flatMap((r) => r.msgResponses.map((a) => MsgCreateLeaseResponse.decode(a.value).leaseUuid));
    }),
  );
  return results.flat();
}

const dn = await devnet({ blockTime: "1s", tenants: TENANTS, profile: "bench" });
try {
  const recorder = await recordFrames(
    dn,
    `tm.event='Tx' AND lease_created.provider_uuid='${dn.keys.provider_uuid}'`,
  );
  const setupStart = Date.now();
  const uuids = await createAll(dn);
  process.stderr.write(`created ${uuids.length} PENDING leases in ${Date.now() - setupStart} ms\n`);
  recorder.close();

  // 1. Acknowledge them all through the batcher.
  const provider = await client(dn, "provider");
  if (SUB_SIGNERS > 0) {
    const subs = deriveSubSigners(dn.account("provider").mnemonic, SUB_SIGNERS);
    const lanes = provider.enableSubSigners(subs, { minBalance: "1000000umfx", topUpAmount: "10000000umfx" });
    await lanes.converge();
  }
  const broadcastsBefore = provider.pipeline?.metrics.broadcasts ?? 0;
  const batcher = new AckBatcher({
    chain: provider,
    clock: systemClock,
    lanes: LANES,
    maxBatch: UUIDS_PER_TX,
    maxWaitMs: 500,
  });
  const startHeight = (await provider.latestBlock()).height;
  const t0 = process.hrtime.bigint();
  if (process.env.BENCH_TRACE)
    process.stderr.write(`${new Date().toISOString()} ack start at height ${startHeight}\n`);
  const outcomes = await Promise.all(
    uuids.map((leaseUuid) => batcher.submit({ kind: "acknowledge", leaseUuid })),
  );
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await batcher.close();
  const heights = new Set(outcomes.map((o) => o.height));
  const failed = outcomes.filter((o) => o.status !== "acknowledged").length;
  const endHeight = Math.max(...outcomes.map((o) => o.height ?? 0));
  const pc = await openCosmosChain({ rpcUrl: dn.rpc, queryPageLimit: 1000 });
  const active = (await pc.leasesByProvider(dn.keys.provider_uuid, "LEASE_STATE_ACTIVE")).length;
  pc.disconnect();
  const m = provider.pipeline?.metrics;
  line({
    bench: "chain_ack_10k",
    leases: uuids.length,
    seconds: Number((ms / 1000).toFixed(3)),
    goal_seconds: 5,
    failed,
    active_after: active,
    settings: {
      uuids_per_msg: 100,
      msgs_per_tx: UUIDS_PER_TX / 100,
      lanes: LANES,
      sub_signers: SUB_SIGNERS,
      max_wait_ms: 500,
      block_time: "1s",
    },
    txs: (m?.broadcasts ?? 0) - broadcastsBefore,
    inclusion_blocks: heights.size,
    blocks_elapsed: endHeight - startHeight,
    gas_used: m?.gasUsed,
    fees_paid_umfx: String(m?.feesPaid.get("umfx") ?? 0n),
  });
  provider.disconnect();

  // 2. Parse throughput on the recorded frames.
  const frames = recorder.frames;
  let events = 0;
  let parsed = 0;
  const p0 = process.hrtime.bigint();
  const budget = 2_000_000_000n;
  while (process.hrtime.bigint() - p0 < budget) {
    for (const text of frames) {
      const f = classifyFrame(text);
      if (f.type !== "tx") continue;
      events += parseTxEventMap(f.eventMap, ["lease_created"], dn.keys.provider_uuid, f.height, f.txHash)
        .events.length;
      parsed++;
    }
  }
  const seconds = Number(process.hrtime.bigint() - p0) / 1e9;
  const bytes = frames.reduce((n, f) => n + f.length, 0);
  line({
    bench: "chain_event_parse",
    recorded_frames: frames.length,
    events_per_frame: frames.length > 0 ? Math.round(events / parsed) : 0,
    avg_frame_bytes: frames.length > 0 ? Math.round(bytes / frames.length) : 0,
    events_per_second: Math.round(events / seconds),
    frames_per_second: Math.round(parsed / seconds),
    goal_events_per_second: 50_000,
  });
} finally {
  await dn.stop();
}
