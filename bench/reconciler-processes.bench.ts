/**
 * One reconciler sweep over real processes: a devnet (bench genesis), three mock backend
 * processes and providerd. BENCH_LEASES (default 100,000; 1,000 per bench-genesis tenant)
 * single-item leases are created through blocks (about four minutes at 100,000, so the
 * devnet and the mocks' journals need no direct seeding) and provisioned by providerd as
 * usual until every one is ACTIVE; then sweeps are asked for over providerd's control
 * socket (what `fred providerd reconcile` does): the first settles what the burst left,
 * the second, the steady-state sweep of a settled fleet, is timed. Goal ≤ 5 s at 100,000.
 * Prints one JSON line with both sweeps' reports, providerd's RSS and the load average.
 *
 * Usage: npm run bench -- reconciler-processes   (BENCH_LEASES=10000 for a quicker run)
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { type CosmosChain, openCosmosChain } from "../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../src/chain/cosmos/signer.ts";
import { MsgCreateLease } from "../src/chain/proto/index.ts";
import { controlSocketPath, requestSweep } from "../src/provider/reconciler/index.ts";
import { Stack } from "../test/provider/e2e/stack.ts";
import { until } from "../test/support/until.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 100_000);
const PER_TX = 100;
const PER_TENANT = 1000; // bench genesis: credit and pending-lease limit per tenant
const TENANTS = Math.max(1, Math.ceil(LEASES / PER_TENANT));

/** Creates `n` single-item leases for one tenant, PER_TX per tx (each tx waits for its block). */
async function createFor(chain: CosmosChain, n: number, skuUuid: string): Promise<void> {
  for (let done = 0; done < n; done += PER_TX) {
    const msgs = Array.from({ length: Math.min(PER_TX, n - done) }, () => ({
      typeUrl: MsgCreateLease.typeUrl,
      value: MsgCreateLease.fromPartial({ tenant: chain.address, items: [{ skuUuid, quantity: 1n }] }),
    }));
    await chain.send(msgs);
  }
}

/** providerd's resident memory now, in MB (Linux /proc). */
function rssMb(pid: number | undefined): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return m === null ? 0 : Math.round(Number(m[1]) / 1024);
}

const big = JSON.stringify({ cpu_cores: 100_000, memory_mb: 1e9, disk_mb: 1e10 });
const stack = new Stack();
try {
  await stack.start(
    () => [{ MOCK_BACKEND_CAPACITY: big }, { MOCK_BACKEND_CAPACITY: big }, { MOCK_BACKEND_CAPACITY: big }],
    (s) => {
      const small = s.sku("docker-small");
      s.backendOverrides = [{ skus: [small] }, { skus: [small] }, { skus: [small] }];
      s.extraConfig = {
        log_level: "warn",
        tx_poll_interval: "100ms",
        callback_rate_limit_rps: 100_000,
        callback_rate_limit_burst: 100_000,
        // The periodic sweep stays out of the way: the measured one is asked for.
        reconciliation_interval: "1h",
      };
    },
    ["--profile", "bench", "--tenants", String(TENANTS)],
  );
  await stack.startProviderd();
  const small = stack.sku("docker-small");
  // Ten tenants at a time: a hundred concurrent senders time the devnet's queries out.
  let next = 0;
  const sender = async () => {
    for (let i = next++; i < TENANTS; i = next++) {
      const n = Math.min(PER_TENANT, LEASES - i * PER_TENANT);
      if (i === 0) {
        await createFor(stack.tenant, n, small);
        continue;
      }
      const chain = await openCosmosChain({
        rpcUrl: stack.devnet.ready.rpc,
        signer: signerFromKey(Buffer.from(stack.account(`tenant${i + 1}`).private_key_hex, "hex")),
        txPollIntervalMs: 100,
        txTimeoutMs: 120_000,
      });
      try {
        await createFor(chain, n, small);
      } finally {
        chain.disconnect();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(10, TENANTS) }, sender));
  const provider = stack.keys.provider_uuid;
  await until(
    async () => (await stack.tenant.leasesByProvider(provider, "LEASE_STATE_ACTIVE")).length === LEASES,
    `${LEASES} leases ACTIVE`,
    // Listing every ACTIVE lease is heavy for the node at this size: poll slowly.
    { timeoutMs: 1_200_000, intervalMs: 5000 },
  );
  const socket = controlSocketPath(stack.placementPath);
  // The first sweep after the burst settles whatever the burst left (placements adopted);
  // the second is the steady-state sweep the goal is about.
  const first = await requestSweep(socket);
  const t0 = performance.now();
  const report = await requestSweep(socket);
  const ms = performance.now() - t0;
  console.log(
    JSON.stringify({
      bench: "reconciler_sweep_processes",
      leases: LEASES,
      backends: stack.mocks.length,
      first_sweep: first,
      sweep: report,
      sweep_ms: Math.round(ms),
      us_per_lease: Number(((ms * 1000) / LEASES).toFixed(1)),
      goal_s_at_100k: 5,
      providerd_rss_mb: rssMb(stack.providerd?.child.pid),
      load1: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
} finally {
  await stack.close();
}
