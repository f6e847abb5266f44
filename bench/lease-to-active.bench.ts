/**
 * One lease at a time, as a tenant deploys: MsgCreateLease broadcast → the chain reports
 * the lease ACTIVE (providerd saw it, the mock backend provisioned it at once, providerd
 * acknowledged it in a later block). Devnet with 1 s blocks, one mock backend that
 * provisions without delay, providerd, all real processes. The chain's two blocks (the
 * create's and the acknowledgement's) are the floor; the goal is p50 ≤ 2.5 s.
 * Prints one JSON line: p50/p90/max of broadcast → ACTIVE and of create included → ACTIVE,
 * providerd's CPU per lease, with the load average.
 *
 * Usage: npm run bench -- lease-to-active   (BENCH_LEASES=20, BENCH_BLOCK_TIME=1s by default)
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { Stack } from "../test/provider/e2e/stack.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 20);

function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return {
    p50_s: Number((quantile(s, 0.5) / 1000).toFixed(2)),
    p90_s: Number((quantile(s, 0.9) / 1000).toFixed(2)),
    max_s: Number((s[s.length - 1]! / 1000).toFixed(2)),
  };
};

const stack = new Stack();
try {
  await stack.start(
    () => [{}],
    (s) => {
      s.extraConfig = { log_level: process.env.E2E_LOG_LEVEL ?? "warn" };
    },
    // A block every second, as on the Manifest network (the tests' devnet makes one per tx).
    ["--block-time", process.env.BENCH_BLOCK_TIME ?? "1s"],
  );
  await stack.startProviderd();
  const pid = stack.providerd!.pid;
  const fromBroadcast: number[] = [];
  const fromInclusion: number[] = [];
  const cpu0 = cpuSeconds(pid);
  for (let i = 0; i < LEASES; i++) {
    const t0 = performance.now();
    const [lease] = await stack.createLeases(1, "docker-small");
    const included = performance.now();
    while ((await stack.leaseState(lease!)) !== "LEASE_STATE_ACTIVE") {
      if (performance.now() - t0 > 30_000) throw new Error(`lease ${lease} not ACTIVE within 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const active = performance.now();
    fromBroadcast.push(active - t0);
    fromInclusion.push(active - included);
  }
  console.log(
    JSON.stringify({
      bench: "lease_to_active",
      leases: LEASES,
      broadcast_to_active: summary(fromBroadcast),
      included_to_active: summary(fromInclusion),
      goal_p50_s: 2.5,
      providerd_cpu_ms_per_lease: Number((((cpuSeconds(pid) - cpu0) * 1000) / LEASES).toFixed(1)),
      load_avg_1m: Number((loadavg()[0] ?? 0).toFixed(2)),
    }),
  );
} finally {
  await stack.close();
}
