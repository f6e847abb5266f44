/**
 * Acknowledgements per block with 1 lane (the provider key) vs 3 authz sub-signer lanes,
 * in the same run against one `fred devnet` (bench genesis, 1 s blocks). Each phase acks
 * its own PENDING leases through the ack batcher with the same batch size, so the only
 * difference is how many txs can be in flight at once. Prints one JSON line per phase and
 * the load average (the machine is shared: figures move with it).
 * Env: BENCH_LEASES per phase (default 600), BENCH_UUIDS_PER_TX (default 50).
 */
import { loadavg } from "node:os";
import { type CosmosChain, openCosmosChain } from "../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../src/chain/cosmos/signer.ts";
import { deriveSubSigners } from "../src/chain/cosmos/sub-signers.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../src/chain/proto/index.ts";
import { AckBatcher } from "../src/chain/tx/ack-batcher.ts";
import { systemClock } from "../src/core/clock.ts";
import { type Devnet, devnet } from "../test/support/index.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 600);
const UUIDS_PER_TX = Number(process.env.BENCH_UUIDS_PER_TX ?? 50);

function line(value: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function client(dn: Devnet, name: string): Promise<CosmosChain> {
  return openCosmosChain({
    rpcUrl: dn.rpc,
    signer: signerFromKey(Buffer.from(dn.account(name).private_key_hex, "hex")),
    txPollIntervalMs: 100,
    txTimeoutMs: 120_000,
  });
}

async function createLeases(dn: Devnet, tenant: string, n: number): Promise<string[]> {
  const sku = dn.keys.skus.find((s) => s.name === "docker-small")?.uuid as string;
  const c = await client(dn, tenant);
  try {
    const txs = [];
    for (let i = 0; i < n; i += 100) {
      const msgs = Array.from({ length: Math.min(100, n - i) }, () => ({
        typeUrl: MsgCreateLease.typeUrl,
        value: MsgCreateLease.fromPartial({ tenant: c.address, items: [{ skuUuid: sku, quantity: 1n }] }),
      }));
      txs.push(c.send(msgs));
    }
    return (await Promise.all(txs)).flatMap((r) =>
      r.msgResponses.map((a) => MsgCreateLeaseResponse.decode(a.value).leaseUuid),
    );
  } finally {
    c.disconnect();
  }
}

async function ackPhase(provider: CosmosChain, lanes: number, uuids: readonly string[]) {
  const batcher = new AckBatcher({
    chain: provider,
    clock: systemClock,
    lanes,
    maxBatch: UUIDS_PER_TX,
    maxWaitMs: 0,
  });
  const startHeight = (await provider.latestBlock()).height;
  const t0 = process.hrtime.bigint();
  const outcomes = await Promise.all(
    uuids.map((leaseUuid) => batcher.submit({ kind: "acknowledge", leaseUuid })),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await batcher.close();
  const acked = outcomes.filter((o) => o.status === "acknowledged");
  const endHeight = Math.max(...acked.map((o) => o.height ?? 0));
  const blocks = Math.max(1, endHeight - startHeight);
  const perHeight = new Map<number, number>();
  for (const o of acked) perHeight.set(o.height ?? 0, (perHeight.get(o.height ?? 0) ?? 0) + 1);
  return {
    leases: uuids.length,
    acknowledged: acked.length,
    failed: uuids.length - acked.length,
    seconds: Number(seconds.toFixed(3)),
    blocks_elapsed: blocks,
    acks_per_block: Number((acked.length / blocks).toFixed(1)),
    max_acks_in_one_block: Math.max(...perHeight.values()),
    inclusion_blocks: perHeight.size,
  };
}

const dn = await devnet({ blockTime: "1s", tenants: 2, profile: "bench" });
try {
  const [single, laned] = await Promise.all([
    createLeases(dn, "tenant1", LEASES),
    createLeases(dn, "tenant2", LEASES),
  ]);
  process.stderr.write(`created 2 × ${LEASES} PENDING leases\n`);
  const settings = { uuids_per_tx: UUIDS_PER_TX, block_time: "1s" };

  const plain = await client(dn, "provider");
  const one = await ackPhase(plain, 1, single);
  plain.disconnect();
  line({
    bench: "signers_acks_per_block",
    lanes: 1,
    signer: "provider key",
    ...one,
    settings,
    loadavg: loadavg(),
  });

  const withSubs = await client(dn, "provider");
  const subs = deriveSubSigners(dn.account("provider").mnemonic, 3);
  const lanes = withSubs.enableSubSigners(subs, { minBalance: "1000000umfx", topUpAmount: "10000000umfx" });
  await lanes.converge();
  const three = await ackPhase(withSubs, 3, laned);
  withSubs.disconnect();
  line({
    bench: "signers_acks_per_block",
    lanes: 3,
    signer: "3 authz sub-signers (MsgExec)",
    ...three,
    speedup: Number((three.acks_per_block / Math.max(one.acks_per_block, 0.1)).toFixed(2)),
    reference: "~150 vs ~50 per block on the reference's chain",
    settings,
    loadavg: loadavg(),
  });
} finally {
  await dn.stop();
}
