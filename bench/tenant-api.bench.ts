/**
 * The tenant API on real processes (devnet, two mock backends, providerd), four figures:
 * 1. authenticated `GET /v1/leases/{uuid}/status` requests/s at full load (autocannon),
 *    beside the raw native secp256k1 verify rate measured in this run (goal ≥ 0.8×);
 * 2. p50/p99 latency of the same request at a fixed 500 req/s;
 * 3. providerd's RSS with 1,000 idle event subscribers vs none (goal ≤ 50 MB more);
 * 4. event latency with those 1,000 subscribers connected: a signed provision callback
 *    sent → its frame received by each of the lease's 10 subscribers (goal p99 ≤ 100 ms).
 *    Timed from the callback's send, so it includes the callback's verification and its
 *    durable application: an upper bound of "applied → received".
 * Both sides of the throughput ratio are per CPU-second of the process doing the work
 * (providerd's requests, this process's bare verifies), so other load on the machine does
 * not skew it; the wall-clock figures are printed beside them.
 * Status has no replay protection, so one access token (re-minted every 20 s) serves a
 * load phase: its first request verifies the signature, the others find it in the
 * verified-token cache (a client polling with one token). A second phase sends a fresh
 * token per request, as the tenant SDK does, so every request runs the full verify; the
 * bare Fastify control (tenant-api-bare.ts) verifies every request too. The mocks take an hour
 * to provision, so the leases stay PENDING with an open attempt whose callback we send.
 * Each JSON line carries the 1-minute load average beside its figure.
 *
 * Usage: npm run bench -- tenant-api   (BENCH_SECONDS=10 for longer load phases)
 */
import { spawn } from "node:child_process";
import { createPublicKey, verify } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { hmacSecret, SIGNATURE_HEADER, signRequest } from "../src/auth/hmac.ts";
import { adr036SignDoc, mintTenantToken, TOKEN_MAX_AGE_SECONDS } from "../src/auth/token.ts";
import { PlacementStore } from "../src/provider/store/index.ts";
import { WsClient, wsUrl } from "../test/provider/api/ws-client.ts";
import { SECRETS, SIDS, Stack } from "../test/provider/e2e/stack.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LEASES = 100; // × 10 subscribers each = the hub's 1,000 total
const PER_LEASE = 10;

const load = () => Number((loadavg()[0] ?? 0).toFixed(2));
const emit = (figure: Record<string, unknown>) =>
  console.log(JSON.stringify({ ...figure, load_avg_1m: load() }));

function rssMb(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return m === null ? 0 : Math.round(Number(m[1]) / 1024);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/**
 * The ECDSA check of `token` with Node's crypto and nothing else (the ceiling), per wall
 * second and per CPU-second of this process: the per-CPU figure is what one core does,
 * whatever else the machine runs, and so compares with providerd's requests per CPU-second.
 */
function rawVerifyRate(token: string, seconds: number): { wall: number; perCpu: number } {
  const env = JSON.parse(Buffer.from(token, "base64").toString()) as Record<string, string>;
  const spki = Buffer.concat([
    Buffer.from("3036301006072a8648ce3d020106052b8104000a032200", "hex"),
    Buffer.from(env.pub_key!, "base64"),
  ]);
  const key = createPublicKey({ key: spki, format: "der", type: "spki" });
  const doc = Buffer.from(adr036SignDoc(env.tenant!, `${env.tenant}:${env.lease_uuid}:${env.timestamp}`));
  const sig = Buffer.from(env.signature!, "base64");
  if (!verify("sha256", doc, { key, dsaEncoding: "ieee-p1363" }, sig)) throw new Error("raw verify failed");
  let ops = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    for (let i = 0; i < 50; i++) verify("sha256", doc, { key, dsaEncoding: "ieee-p1363" }, sig);
    ops += 50;
  }
  const wallS = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { wall: ops / wallS, perCpu: ops / ((cpu.user + cpu.system) / 1e6) };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * autocannon on 16 connections with one access token, re-minted every 20 s (a token lives
 * 30 s): each connection takes the new one with its next request, so a phase may run longer
 * than a token's life without a per-request cost in the load generator.
 */
async function loadWithOneToken(
  url: string,
  mint: () => string,
  opts: Pick<autocannon.Options, "duration" | "overallRate">,
): Promise<autocannon.Result> {
  let headers = { authorization: `Bearer ${mint()}` };
  const clients: autocannon.Client[] = [];
  const remint = setInterval(() => {
    headers = { authorization: `Bearer ${mint()}` };
    for (const c of clients) c.setHeaders(headers);
  }, 20_000);
  try {
    return await autocannon({ url, headers, connections: 16, setupClient: (c) => clients.push(c), ...opts });
  } finally {
    clearInterval(remint);
  }
}

/**
 * The same load on a bare Fastify route doing only the token's verify (tenant-api-bare.ts,
 * its own process): requests per CPU-second of that process, the ceiling beside providerd's.
 */
async function bareControl(path: string, mint: () => string): Promise<number> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("tenant-api-bare.ts", import.meta.url))],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string];
    const { url } = JSON.parse(line) as { url: string };
    const before = cpuSeconds(child.pid);
    const r = await loadWithOneToken(`${url}${path}`, mint, { duration: SECONDS });
    if (r.non2xx > 0 || r.errors > 0)
      throw new Error(`bare control: ${r.non2xx} non-2xx, ${r.errors} errors`);
    return r.requests.total / (cpuSeconds(child.pid) - before);
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
  }
}

/** Requests of the fresh-token run, each with a token of its own. */
const FRESH_TOKENS = LEASES * 10;

const stack = new Stack();
const subscribers: WsClient[] = [];
try {
  await stack.start(
    (s) => {
      const skus = JSON.stringify({ [s.sku("docker-small")]: { cpu_cores: 0.01, memory_mb: 1, disk_mb: 1 } });
      return [
        { MOCK_BACKEND_SKUS: skus, MOCK_BACKEND_DELAY: "1h" },
        { MOCK_BACKEND_SKUS: skus, MOCK_BACKEND_DELAY: "1h" },
      ];
    },
    (s) => {
      s.extraConfig = {
        log_level: process.env.E2E_LOG_LEVEL ?? "warn",
        rate_limit_rps: 1_000_000,
        rate_limit_burst: 1_000_000,
        tenant_rate_limit_rps: 1_000_000,
        tenant_rate_limit_burst: 1_000_000,
        callback_rate_limit_rps: 1_000_000,
        callback_rate_limit_burst: 1_000_000,
      };
    },
    // The bench genesis lifts the per-tenant pending-lease cap (10 by default).
    ["--profile", "bench", "--tenants", "1"],
  );
  await stack.startProviderd();
  const tenantKey = Buffer.from(stack.account("tenant1").private_key_hex, "hex");
  const leases = await stack.createLeases(LEASES, "docker-small");
  const pid = stack.providerd!.pid;

  // Every lease has its attempt on a backend before anything is measured.
  const attempts = new Map<string, { backend: string; operationId: string }>();
  const store = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    const deadline = Date.now() + 60_000;
    while (attempts.size < LEASES) {
      for (const a of store.placements.unresolvedAttempts()) attempts.set(a.leaseUuid, a);
      if (Date.now() > deadline) throw new Error(`only ${attempts.size} of ${LEASES} attempts recorded`);
      if (attempts.size < LEASES) await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    store.close();
  }

  // 1. Full load, then the raw verify ceiling right after (same machine state).
  const statusUrl = `${stack.api}/v1/leases/${leases[0]}/status`;
  const mint = (lease: string, timestamp = Math.floor(Date.now() / 1000)) =>
    mintTenantToken({ privateKey: tenantKey, leaseUuid: lease, timestamp });
  // providerd's own background work (event feed, reconciler, monitors) runs during the load
  // phase too: its CPU rate with no request at all, over a few quiet seconds, is printed so
  // the request cost can be read without it.
  const idleBefore = cpuSeconds(pid);
  const idleStart = performance.now();
  await new Promise((r) => setTimeout(r, 3_000));
  const idleCpuPerS = (cpuSeconds(pid) - idleBefore) / ((performance.now() - idleStart) / 1000);
  const cpuBefore = cpuSeconds(pid);
  const loadStart = performance.now();
  const full = await loadWithOneToken(statusUrl, () => mint(leases[0]!), { duration: SECONDS });
  if (full.non2xx > 0 || full.errors > 0)
    throw new Error(`status under load: ${full.non2xx} non-2xx, ${full.errors} errors`);
  const providerdCpu = cpuSeconds(pid) - cpuBefore;
  const loadSeconds = (performance.now() - loadStart) / 1000;
  const requestCpu = providerdCpu - idleCpuPerS * loadSeconds;
  const bare = await bareControl(`/v1/leases/${leases[0]}/status`, () => mint(leases[0]!));
  const raw = rawVerifyRate(mint(leases[0]!), 2);
  // The load generator shares the two cores with providerd, so the wall-clock rate is bounded
  // by the machine; requests per providerd CPU-second is what one core of providerd serves,
  // held against what one core of bare verification does (the goal figure: ratio_per_cpu).
  const perCpuSecond = full.requests.total / providerdCpu;
  emit({
    bench: "tenant_status_throughput",
    requests_per_s: Math.round(full.requests.average),
    raw_native_verify_per_s: Math.round(raw.wall),
    ratio: Number((full.requests.average / raw.wall).toFixed(3)),
    providerd_cpu_s: Number(providerdCpu.toFixed(2)),
    requests_per_providerd_cpu_s: Math.round(perCpuSecond),
    raw_native_verify_per_cpu_s: Math.round(raw.perCpu),
    ratio_per_cpu: Number((perCpuSecond / raw.perCpu).toFixed(3)),
    goal_ratio_per_cpu: 0.8,
    providerd_idle_cpu_per_s: Number(idleCpuPerS.toFixed(3)),
    requests_per_providerd_cpu_s_less_idle: Math.round(full.requests.total / requestCpu),
    ratio_per_cpu_less_idle: Number((full.requests.total / requestCpu / raw.perCpu).toFixed(3)),
    latency_p50_ms: full.latency.p50,
    latency_p99_ms: full.latency.p99,
  });

  // 1b. The same with a fresh token on every request, the way the tenant SDK sends it. A token
  // is a deterministic signature of (lease, timestamp), so distinct tokens need distinct pairs:
  // each is minted just before it is sent (none ages in a queue), for the next lease in turn
  // at the latest second that lease has not used yet.
  const usedSeconds = new Map<string, Set<number>>(leases.map((l) => [l, new Set()]));
  let minted = 0;
  const freshToken = (): { url: string; token: string } => {
    const lease = leases[minted++ % LEASES]!;
    const used = usedSeconds.get(lease)!;
    const now = Math.floor(Date.now() / 1000);
    let ts = now;
    while (used.has(ts)) ts--;
    if (now - ts > TOKEN_MAX_AGE_SECONDS / 2) throw new Error("fresh tokens: no unused second left");
    used.add(ts);
    return { url: `${stack.api}/v1/leases/${lease}/status`, token: mint(lease, ts) };
  };
  // Sixteen plain clients send FRESH_TOKENS requests between them, each with its own token.
  let failures = 0;
  const freshLatencies: number[] = [];
  const freshCpuBefore = cpuSeconds(pid);
  const freshStart = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (minted < FRESH_TOKENS) {
        const f = freshToken();
        const t0 = performance.now();
        const res = await fetch(f.url, { headers: { authorization: `Bearer ${f.token}` } });
        await res.arrayBuffer();
        freshLatencies.push(performance.now() - t0);
        if (res.status !== 200) failures++;
      }
    }),
  );
  const freshSeconds = (performance.now() - freshStart) / 1000;
  if (failures > 0) throw new Error(`status with fresh tokens: ${failures} answers other than 200`);
  const freshPerCpu = FRESH_TOKENS / (cpuSeconds(pid) - freshCpuBefore);
  freshLatencies.sort((a, b) => a - b);
  const pct = (q: number) =>
    Number((freshLatencies[Math.floor(q * (freshLatencies.length - 1))] ?? 0).toFixed(1));
  emit({
    bench: "tenant_status_throughput_fresh_tokens",
    requests: FRESH_TOKENS,
    requests_per_s: Math.round(FRESH_TOKENS / freshSeconds),
    raw_native_verify_per_s: Math.round(raw.wall),
    ratio: Number((FRESH_TOKENS / freshSeconds / raw.wall).toFixed(3)),
    requests_per_providerd_cpu_s: Math.round(freshPerCpu),
    raw_native_verify_per_cpu_s: Math.round(raw.perCpu),
    ratio_per_cpu: Number((freshPerCpu / raw.perCpu).toFixed(3)),
    // The ceiling of a Fastify route that verifies every request, measured in phase 1.
    bare_fastify_verify_per_cpu_s: Math.round(bare),
    bare_fastify_ratio_per_cpu: Number((bare / raw.perCpu).toFixed(3)),
    share_of_bare_control: Number((freshPerCpu / bare).toFixed(3)),
    latency_p50_ms: pct(0.5),
    latency_p99_ms: pct(0.99),
  });

  // 2. Fixed 500 req/s.
  const fixed = await loadWithOneToken(statusUrl, () => mint(leases[0]!), {
    overallRate: 500,
    duration: SECONDS * 2,
  });
  if (fixed.non2xx > 0 || fixed.errors > 0)
    throw new Error(`status at 500/s: ${fixed.non2xx} non-2xx, ${fixed.errors} errors`);
  emit({
    bench: "tenant_status_latency_at_500_rps",
    achieved_per_s: Math.round(fixed.requests.average),
    p50_ms: fixed.latency.p50,
    p99_ms: fixed.latency.p99,
  });

  // 3. RSS: none, then 1,000 idle subscribers (each has received its snapshot).
  const rssBefore = rssMb(pid);
  for (let i = 0; i < LEASES; i += 10) {
    await Promise.all(
      leases.slice(i, i + 10).flatMap((lease) =>
        Array.from({ length: PER_LEASE }, async () => {
          const access = mintTenantToken({
            privateKey: tenantKey,
            leaseUuid: lease,
            timestamp: Math.floor(Date.now() / 1000),
          });
          const c = await new WsClient(wsUrl(stack.api, `/v1/leases/${lease}/events`), {
            headers: { authorization: `Bearer ${access}` },
          }).open();
          subscribers.push(c);
          await c.frame(1);
        }),
      ),
    );
  }
  const rssWith = rssMb(pid);
  emit({
    bench: "tenant_events_rss",
    subscribers: subscribers.length,
    rss_without_mb: rssBefore,
    rss_with_mb: rssWith,
    delta_mb: rssWith - rssBefore,
    goal_delta_mb: 50,
  });

  // 4. One signed success callback per lease, one at a time; every subscriber times its frame.
  const byLease = new Map<string, WsClient[]>();
  for (const c of subscribers) {
    const lease = new URL(c.ws.url).pathname.split("/")[3]!;
    byLease.set(lease, [...(byLease.get(lease) ?? []), c]);
  }
  const latencies: number[] = [];
  for (const lease of leases) {
    const a = attempts.get(lease)!;
    const i = Number(a.backend.slice("mock-".length)) - 1;
    const uri = `/callbacks/provision?operation_id=${a.operationId}`;
    const body = JSON.stringify({
      lease_uuid: lease,
      status: "success",
      error: "",
      backend_storage_id: SIDS[i],
    });
    const signature = signRequest(hmacSecret(SECRETS[i]!), {
      method: "POST",
      uri,
      body,
      timestamp: Math.floor(Date.now() / 1000),
    });
    const clients = byLease.get(lease) ?? [];
    const start = performance.now();
    const arrivals = clients.map(async (c) => {
      await c.frame(2);
      latencies.push(performance.now() - start);
    });
    const res = await fetch(`${stack.api}${uri}`, {
      method: "POST",
      headers: { "content-type": "application/json", [SIGNATURE_HEADER]: signature },
      body,
    });
    if (res.status !== 200) throw new Error(`callback for ${lease}: ${res.status} ${await res.text()}`);
    await Promise.all(arrivals);
  }
  latencies.sort((x, y) => x - y);
  emit({
    bench: "tenant_event_latency",
    subscribers: subscribers.length,
    frames: latencies.length,
    p50_ms: Number(percentile(latencies, 50).toFixed(1)),
    p99_ms: Number(percentile(latencies, 99).toFixed(1)),
    max_ms: Number(latencies[latencies.length - 1]!.toFixed(1)),
    goal_p99_ms: 100,
  });
} finally {
  for (const c of subscribers) c.close();
  await stack.close();
}
