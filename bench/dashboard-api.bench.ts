/**
 * The operator dashboard's read API under page views: a devnet, one mock backend and
 * providerd holding LEASES active leases. Times sequential GETs of each route (p50/p99 ms)
 * and compares the devnet's CPU while nobody looks with its CPU while the overview is asked
 * VIEWS times as fast as one client can: chain reads are memoized (15 s), so views must not
 * add chain load in proportion to their number. Prints one JSON line.
 *
 * Usage: npm run bench -- dashboard-api
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { mockSkus, Stack } from "../test/provider/e2e/stack.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 100);
const VIEWS = 500;
/** The chain admits 10 PENDING leases per tenant: each batch becomes ACTIVE before the next. */
const BATCH = 10;

function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function quantileMs(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number((sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0).toFixed(2));
}

const stack = new Stack();
try {
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" }],
    () => {},
  );
  await stack.startProviderd();
  const uuids: string[] = [];
  for (let made = 0; made < LEASES; made += BATCH) {
    const batch = await stack.createLeases(Math.min(BATCH, LEASES - made), "docker-small");
    await stack.waitState(batch, "LEASE_STATE_ACTIVE", 120_000);
    uuids.push(...batch);
  }
  const token = readFileSync(join(dirname(stack.placementPath), "operator-token"), "utf8").trim();
  const headers = { authorization: `Bearer ${token}` };
  const get = async (path: string) => {
    const t = performance.now();
    const res = await fetch(`${stack.operator}${path}`, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    return performance.now() - t;
  };
  const timed = async (path: string, n: number) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) ms.push(await get(path));
    return { p50: quantileMs(ms, 0.5), p99: quantileMs(ms, 0.99) };
  };
  await sleep(5_000);
  const devnetPid = stack.devnet.proc.pid;
  const idle0 = cpuSeconds(devnetPid);
  const idleT = performance.now();
  await sleep(10_000);
  const devnetIdle = (cpuSeconds(devnetPid) - idle0) / ((performance.now() - idleT) / 1000);
  const busy0 = cpuSeconds(devnetPid);
  const busyT = performance.now();
  const overview = await timed("/api/overview", VIEWS);
  const viewSeconds = (performance.now() - busyT) / 1000;
  const devnetBusy = cpuSeconds(devnetPid) - busy0;
  const figures = {
    bench: "dashboard_api",
    node: process.version,
    leases: LEASES,
    overview_views: VIEWS,
    overview_views_per_s: Number((VIEWS / viewSeconds).toFixed(1)),
    overview_ms: overview,
    fleet_ms: await timed("/api/fleet", 200),
    leases_page_200_ms: await timed("/api/leases?limit=200", 200),
    lease_detail_ms: await timed(`/api/leases/${uuids[0]}`, 200),
    series_ms: await timed("/api/series", 200),
    devnet_cpu_per_s_idle: Number(devnetIdle.toFixed(3)),
    // All the devnet spent while the VIEWS overviews were answered (one memoized listing).
    devnet_cpu_seconds_during_views: Number(devnetBusy.toFixed(3)),
    load1: Number(loadavg()[0]!.toFixed(2)),
  };
  console.log(JSON.stringify(figures));
} finally {
  await stack.close();
}
