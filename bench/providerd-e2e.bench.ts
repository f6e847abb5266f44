/**
 * providerd end to end on real processes: a devnet (bench genesis), two mock backends
 * and providerd. One block carries BENCH_LEASES (default 10,000) MsgCreateLease; the
 * figure is the time from that block's commit until every lease is ACTIVE on chain
 * (provisioned on a backend, called back, acknowledged in batched txs). Goals (#37):
 * ≤ 8 s at load < 2, the four processes' CPU ≤ 12 s, providerd's peak RSS ≤ 200 MB.
 * Prints one JSON line.
 *
 * Usage: npm run bench -- providerd-e2e   (BENCH_LEASES=2000 for a quicker run)
 * BENCH_STORE=postgres runs providerd on PostgreSQL (issue #36): the stores moved into a
 * local cluster with `fred placement migrate`, one instance leading; it also prints the
 * database's steady-state load (commits and row writes per second per 1,000 ACTIVE leases,
 * over BENCH_STEADY_S seconds after the burst, default 30).
 * BENCH_WARMUP_LEASES=1000 first makes that many leases ACTIVE (another tenant's), so the
 * burst runs on processes that have compiled their hot paths; by default the burst is the
 * first work of freshly started processes.
 * Digging in: E2E_LOG_LEVEL=info BENCH_PROVIDERD_LOG=/tmp/providerd.log keeps providerd's
 * log; FRED_PROFILE_DIR=/tmp/prof writes a CPU profile of every process of the stack.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { StargateClient } from "@cosmjs/stargate";
import pg from "pg";
import { MsgCreateLease, toBytes } from "../src/chain/proto/index.ts";
import { buildSignedTx } from "../src/devnet/tx/build.ts";
import { Stack } from "../test/provider/e2e/stack.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 10_000);
const PER_TX = 100;
const PER_TENANT = 1000; // bench genesis: credit and pending-lease limit per tenant
const TENANTS = Math.max(1, Math.ceil(LEASES / PER_TENANT));
const STORE = process.env.BENCH_STORE === "postgres" ? "postgres" : "sqlite";
const STEADY_S = Number(process.env.BENCH_STEADY_S ?? 30);
/** Leases (at most 1,000) made ACTIVE before the burst, by a tenant of their own: warm processes. */
const WARMUP = Math.min(1000, Number(process.env.BENCH_WARMUP_LEASES ?? 0));

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Where a process's CPU went so far, from /proc (Linux): its main thread's user and system
 * seconds, and the seconds of its other threads by name (V8Worker: V8's GC and compiler
 * helpers; libuv-worker: the thread pool, where fsync and the journals' group commits run).
 */
function cpuDetail(pid: number | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const f = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    const [user, sys] = [Number(f[11]) / 100, Number(f[12]) / 100];
    if (tid === String(pid)) {
      out.main_user = user;
      out.main_sys = sys;
    } else out[name] = (out[name] ?? 0) + user + sys;
  }
  return out;
}

/**
 * CPU seconds of the PostgreSQL server so far: the postmaster, what its exited children
 * used (cutime, cstime) and its live children (one backend per connection, the writers).
 */
function postgresCpuSeconds(postmaster: number): number {
  const fields = (pid: number | string) =>
    readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  const own = fields(postmaster);
  let total = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) / 100;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const f = fields(pid);
      if (Number(f[1]) === postmaster) total += (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** Write system calls a process made so far (sockets and files: syscw in /proc/<pid>/io). */
function writeCalls(pid: number | undefined): number {
  return Number(readFileSync(`/proc/${pid}/io`, "utf8").match(/^syscw: (\d+)$/m)?.[1] ?? 0);
}

/** Resident memory of a process (VmRSS now, or VmHWM: its peak so far), in MB. */
function rssMb(pid: number | undefined, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return line === null ? 0 : Math.round(Number(line[1]) / 1024);
}

let rpcId = 0;
// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC results are read field by field.
async function call(url: string, method: string, params: unknown = {}): Promise<any> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params }),
  });
  const body = (await res.json()) as { error?: unknown; result?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

// biome-ignore lint/suspicious/noExplicitAny: block_results is read field by field.
function acknowledgementsIn(results: any, provider: string): number {
  let n = 0;
  for (const tx of results.txs_results ?? []) {
    for (const ev of tx.events ?? []) {
      if (ev.type !== "lease_acknowledged") continue;
      if (
        ev.attributes.some(
          (a: { key: string; value: string }) => a.key === "provider_uuid" && a.value === provider,
        )
      )
        n++;
    }
  }
  return n;
}

/** providerd's `fred_provision_requests_total{outcome="accepted"}`, by backend. */
async function acceptedByBackend(api: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${api}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^fred_provision_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const backend = /backend="([^"]*)"/.exec(m[1]!)?.[1];
    if (backend !== undefined && m[1]!.includes('outcome="accepted"')) out[backend] = Number(m[2]);
  }
  return out;
}

/** The database's counters (pg_stat_database) of the bench's database. */
async function databaseCounters(url: string): Promise<{ commits: number; writes: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ commits: string; writes: string }>(
      `SELECT xact_commit AS commits, tup_inserted + tup_updated + tup_deleted AS writes
       FROM pg_stat_database WHERE datname = current_database()`,
    );
    return { commits: Number(rows[0]!.commits), writes: Number(rows[0]!.writes) };
  } finally {
    await client.end();
  }
}

const stack = new Stack();
let databaseUrl = "";
try {
  await stack.start(
    () => [
      { MOCK_BACKEND_CAPACITY: JSON.stringify({ cpu_cores: 100_000, memory_mb: 1e9, disk_mb: 1e10 }) },
      { MOCK_BACKEND_CAPACITY: JSON.stringify({ cpu_cores: 100_000, memory_mb: 1e9, disk_mb: 1e10 }) },
    ],
    (s) => {
      const small = s.sku("docker-small");
      s.backendOverrides = [{ skus: [small] }, { skus: [small] }];
      s.extraConfig = {
        log_level: process.env.E2E_LOG_LEVEL ?? "warn",
        tx_poll_interval: "100ms",
        // The default callback budget (100/s per backend) would make this a rate-limit test.
        callback_rate_limit_rps: 100_000,
        callback_rate_limit_burst: 100_000,
      };
    },
    ["--profile", "bench", "--tenants", String(TENANTS + (WARMUP > 0 ? 1 : 0))],
  );
  if (STORE === "postgres") databaseUrl = await stack.moveToPostgres("bench");
  await stack.startProviderd();
  if (WARMUP > 0) {
    // Every process has then compiled its hot paths, as on a host that has run for a while.
    const warm = await stack.createLeasesFor(`tenant${TENANTS + 1}`, WARMUP, "docker-small");
    await stack.waitState(warm, "LEASE_STATE_ACTIVE", 120_000);
  }
  const url = stack.devnet.rpc;
  const small = stack.sku("docker-small");
  const stargate = await StargateClient.connect(url);

  await call(url, "devnet_pause");
  const txs: Uint8Array[] = [];
  for (let t = 1; t <= TENANTS; t++) {
    const a = stack.account(`tenant${t}`);
    const acc = await stargate.getAccount(a.address);
    if (acc === null) throw new Error(`no account for tenant${t}`);
    let sequence = BigInt(acc.sequence);
    const mine = Math.min(PER_TENANT, LEASES - (t - 1) * PER_TENANT);
    for (let done = 0; done < mine; done += PER_TX) {
      const n = Math.min(PER_TX, mine - done);
      const gas = BigInt(n) * 300_000n;
      txs.push(
        buildSignedTx({
          chainId: stack.keys.chain_id,
          messages: Array.from({ length: n }, () => ({
            typeUrl: MsgCreateLease.typeUrl,
            value: toBytes(MsgCreateLease, {
              tenant: a.address,
              items: [{ skuUuid: small, quantity: 1n, serviceName: "" }],
              metaHash: new Uint8Array(),
            }),
          })),
          signers: [
            {
              privateKey: Buffer.from(a.private_key_hex, "hex"),
              accountNumber: BigInt(acc.accountNumber),
              sequence: sequence++,
            },
          ],
          fee: { amount: [{ denom: "umfx", amount: String((gas * 25n) / 1_000_000n + 1n) }], gasLimit: gas },
        }),
      );
    }
  }
  for (const tx of txs) {
    const r = await call(url, "broadcast_tx_sync", { tx: Buffer.from(tx).toString("base64") });
    if (r.code !== 0) throw new Error(`CheckTx ${r.codespace}/${r.code}: ${r.log}`);
  }
  const processes = {
    devnet: stack.devnet.proc.child.pid,
    "mock-1": stack.mocks[0]!.child.pid,
    "mock-2": stack.mocks[1]!.child.pid,
    providerd: stack.providerd!.child.pid,
  };
  // What providerd holds before the burst (modules, caches, startup garbage not yet collected).
  const rssBefore = rssMb(processes.providerd, "VmRSS");
  const postmaster =
    stack.postgres === undefined
      ? undefined
      : Number(readFileSync(`${stack.postgres.dir}/data/postmaster.pid`, "utf8").split("\n")[0]);
  const postgresCpu0 = postmaster === undefined ? 0 : postgresCpuSeconds(postmaster);
  const accepted0 = await acceptedByBackend(stack.api);
  await call(url, "devnet_produce_block");
  const t0 = performance.now();
  const cpu0 = Object.fromEntries(Object.entries(processes).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const detail0 = Object.fromEntries(Object.entries(processes).map(([k, pid]) => [k, cpuDetail(pid)]));
  const writes0 = Object.fromEntries(Object.entries(processes).map(([k, pid]) => [k, writeCalls(pid)]));
  const createdAt = Number((await call(url, "status")).sync_info.latest_block_height);
  await call(url, "devnet_resume");
  stargate.disconnect();

  // Count lease_acknowledged events block by block: cheap for the chain, unlike listing
  // thousands of PENDING leases every poll (which would slow the very node under test).
  const provider = stack.keys.provider_uuid;
  let acknowledged = 0;
  let seen = createdAt;
  while (acknowledged < LEASES) {
    if (performance.now() - t0 > 600_000) throw new Error(`${acknowledged} leases ACTIVE after 10 min`);
    const latest = Number((await call(url, "status")).sync_info.latest_block_height);
    for (; seen < latest; seen++)
      acknowledged += acknowledgementsIn(
        await call(url, "block_results", { height: String(seen + 1) }),
        provider,
      );
    if (acknowledged < LEASES) await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = Object.fromEntries(
    Object.entries(processes).map(([k, pid]) => [k, Number((cpuSeconds(pid) - cpu0[k]!).toFixed(2))]),
  );
  const detail = Object.fromEntries(
    Object.entries(processes).map(([k, pid]) => {
      const before = detail0[k]!;
      const after = Object.entries(cpuDetail(pid)).map(([t, s]) => [
        t,
        Number((s - (before[t] ?? 0)).toFixed(2)),
      ]);
      return [k, Object.fromEntries(after.filter(([, s]) => s !== 0))];
    }),
  );
  if (postmaster !== undefined)
    cpu.postgres = Number((postgresCpuSeconds(postmaster) - postgresCpu0).toFixed(2));
  const writes = Object.fromEntries(
    Object.entries(processes).map(([k, pid]) => [k, writeCalls(pid) - (writes0[k] ?? 0)]),
  );
  const accepted1 = await acceptedByBackend(stack.api);
  const active = (await stack.tenant.leasesByProvider(provider, "LEASE_STATE_ACTIVE")).length;
  if (active !== LEASES + WARMUP)
    throw new Error(`expected ${LEASES + WARMUP} ACTIVE leases, found ${active}`);
  // On PostgreSQL: what the database does while the leases just run (renewals, sweeps, polls).
  let steady: Record<string, number> | undefined;
  if (STORE === "postgres") {
    const before = await databaseCounters(databaseUrl);
    await new Promise((r) => setTimeout(r, STEADY_S * 1000));
    const after = await databaseCounters(databaseUrl);
    const per1000 = 1000 / LEASES / STEADY_S;
    steady = {
      window_s: STEADY_S,
      commits_per_s_per_1000_leases: Number(((after.commits - before.commits) * per1000).toFixed(2)),
      row_writes_per_s_per_1000_leases: Number(((after.writes - before.writes) * per1000).toFixed(2)),
    };
  }
  console.log(
    JSON.stringify({
      bench: "providerd_e2e_block_to_active",
      store: STORE,
      leases: LEASES,
      warmup_leases: WARMUP,
      create_txs: txs.length,
      seconds: Number(seconds.toFixed(2)),
      leases_per_s: Math.round(LEASES / seconds),
      // Issue #37's goals: ≤ 8 s at load < 2, ≤ 12 CPU-s for the stack, peak RSS ≤ 200 MB.
      goal_s: 8,
      // CPU seconds each process used from the block's commit until all were ACTIVE.
      cpu_s: cpu,
      stack_cpu_s: Number(
        Object.values(cpu)
          .reduce((a, b) => a + b, 0)
          .toFixed(2),
      ),
      goal_stack_cpu_s: 12,
      // The same split by thread: main thread user/system, the others by name.
      cpu_threads_s: detail,
      // Write system calls (socket sends, WAL pages) each process made in that window.
      write_syscalls: writes,
      // How the router spread the burst: provisions each backend accepted in it.
      provisions_by_backend: Object.fromEntries(
        Object.entries(accepted1).map(([b, n]) => [b, n - (accepted0[b] ?? 0)]),
      ),
      providerd_rss_before_mb: rssBefore,
      providerd_peak_rss_mb: rssMb(processes.providerd, "VmHWM"),
      goal_peak_rss_mb: 200,
      ...(steady === undefined ? {} : { database_steady_load: steady }),
      load1: Number(loadavg()[0]!.toFixed(2)),
    }),
  );
} finally {
  const log = process.env.BENCH_PROVIDERD_LOG;
  if (log !== undefined) writeFileSync(log, stack.providerd?.stderr() ?? "");
  await stack.close();
}
