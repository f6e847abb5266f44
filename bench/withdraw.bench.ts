/**
 * One providerd withdraw cycle over 10,000 ACTIVE leases on a real `fred devnet` (bench
 * genesis): the billing job exactly as providerd runs it (dry-run query, then provider-wide
 * MsgWithdraw pages of withdraw_limit following next_key). Goal: ≤ 100 txs with every lease
 * settled; prints the wall time of the cycle, and the txs and leases it took.
 * The leases are created and acknowledged through ordinary blocks first (10 tenants,
 * 100 messages per tx). Env: BENCH_LEASES (default 10000), BENCH_WITHDRAW_LIMIT (100).
 */
import { type CosmosChain, openCosmosChain } from "../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../src/chain/cosmos/signer.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../src/chain/proto/index.ts";
import { systemClock } from "../src/core/clock.ts";
import { createLogger } from "../src/log.ts";
import { createBillingMetrics, withdrawCycle } from "../src/provider/billing/index.ts";
import { type Devnet, devnet } from "../test/support/index.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 10_000);
const WITHDRAW_LIMIT = Number(process.env.BENCH_WITHDRAW_LIMIT ?? 100);
const PER_TENANT = 1000;
const TENANTS = Math.ceil(LEASES / PER_TENANT);

function client(dn: Devnet, name: string, extra: { withdrawLimit?: number } = {}): Promise<CosmosChain> {
  return openCosmosChain({
    rpcUrl: dn.rpc,
    signer: signerFromKey(Buffer.from(dn.account(name).private_key_hex, "hex")),
    txPollIntervalMs: 100,
    txTimeoutMs: 120_000,
    queryPageLimit: 1000,
    ...extra,
  });
}

async function createAll(dn: Devnet): Promise<string[]> {
  const sku = dn.keys.skus.find((s) => s.name === "docker-small")?.uuid as string;
  const results = await Promise.all(
    Array.from({ length: TENANTS }, async (_, t) => {
      const c = await client(dn, `tenant${t + 1}`);
      const n = Math.min(PER_TENANT, LEASES - t * PER_TENANT);
      const txs = [];
      for (let i = 0; i < n; i += 100) {
        const msgs = Array.from({ length: Math.min(100, n - i) }, () => ({
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
  const setup = Date.now();
  const uuids = await createAll(dn);
  const provider = await client(dn, "provider", { withdrawLimit: WITHDRAW_LIMIT });
  const acks = await provider.acknowledge(uuids);
  const unacked = acks.filter((o) => o.status !== "acknowledged").length;
  if (unacked > 0) throw new Error(`${unacked} leases not acknowledged`);
  // Wait for a block that carries the jump: the gas simulation then prices the settlement
  // the delivered tx makes (one that simulated a minute earlier owes fewer digits, less gas).
  const before = (await provider.latestBlock()).time.getTime();
  await dn.call("devnet_advance_time", { seconds: 60 });
  while ((await provider.latestBlock()).time.getTime() < before + 60_000) await systemClock.sleep(200);
  process.stderr.write(`${uuids.length} ACTIVE leases ready in ${Date.now() - setup} ms\n`);

  const metrics = createBillingMetrics(undefined);
  const t0 = process.hrtime.bigint();
  const report = await withdrawCycle(
    {
      chain: provider,
      providerUuid: dn.keys.provider_uuid,
      clock: systemClock,
      logger: createLogger("bench", "warn"),
      metrics,
    },
    new AbortController().signal,
  );
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  provider.disconnect();
  const txs = report.heights.length;
  const ok = report.outcome === "complete" && report.settled === BigInt(uuids.length) && txs <= 100;
  process.stdout.write(
    `${JSON.stringify({
      bench: "withdraw_cycle_10k",
      active_leases: uuids.length,
      withdraw_limit: WITHDRAW_LIMIT,
      outcome: report.outcome,
      txs,
      goal_txs: 100,
      leases_settled: Number(report.settled),
      failed_leases: report.failedLeaseUuids.length,
      amount: report.amounts.map((c) => `${c.amount}${c.denom}`).join(","),
      wall_seconds: Number((ms / 1000).toFixed(3)),
      ok,
    })}\n`,
  );
  if (!ok) process.exitCode = 1;
} finally {
  await dn.stop();
}
