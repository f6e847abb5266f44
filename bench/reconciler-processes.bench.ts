/**
 * Reconciler sweeps over real processes: a devnet (bench genesis), three mock backend
 * processes and providerd. Two runs, each printing one JSON line with the load average:
 *
 * - `sweep`: BENCH_LEASES (default 100,000; 1,000 per bench-genesis tenant) single-item
 *   leases are created through blocks (about four minutes at 100,000, so the devnet and the
 *   mocks' journals need no direct seeding) and provisioned by providerd as usual until
 *   every one is ACTIVE; then sweeps are asked for over providerd's control socket (what
 *   `fred providerd reconcile` does): the first settles what the burst left, the second, the
 *   steady-state sweep of a settled fleet, is timed (goal ≤ 5 s at 100,000). A third sweep
 *   measures providerd's heap through its inspector (`--inspect` on 127.0.0.1, port 0): a
 *   full GC, then heapUsed sampled every 10 ms during the sweep; the peak minus the heap
 *   before it, per lease (garbage included), is the goal's figure (≤ 1 KB per lease); a
 *   fourth sweep samples after a full GC every 100 ms: what the sweep holds at once.
 * - `hanging`: BENCH_HANGING_LEASES (default 10,000) leases on a fresh stack (backends keep
 *   the default `timeout`, 30 s, unless BENCH_BACKEND_TIMEOUT sets one); once they are
 *   ACTIVE, mock-3 is restarted with MOCK_BACKEND_HANG_INVENTORY=1 and one sweep is timed:
 *   it gives up on mock-3 after 3 s without an inventory page and acts on the rest
 *   (goal ≤ 5 s).
 *
 * providerd reads the chain with `query_page_limit` BENCH_QUERY_PAGE_LIMIT (default 100,
 * providerd's default; the chain caps it at 1000). Before timing, the bench waits up to
 * BENCH_QUIET_WAIT_S (default 180) for the 1-minute load average to fall below 2.5.
 *
 * Usage: npm run bench -- reconciler-processes   (BENCH_LEASES=10000 for a quicker run;
 * BENCH_RUNS=sweep or =hanging for one of the two; BENCH_STORE=postgres runs providerd on
 * PostgreSQL, its stores moved into a local cluster with `fred placement migrate`)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { controlSocketPath, requestSweep } from "../src/provider/reconciler/index.ts";
import { Stack } from "../test/provider/e2e/stack.ts";
import { until } from "../test/support/until.ts";

const LEASES = Number(process.env.BENCH_LEASES ?? 100_000);
const HANGING_LEASES = Number(process.env.BENCH_HANGING_LEASES ?? 10_000);
const BACKEND_TIMEOUT = process.env.BENCH_BACKEND_TIMEOUT;
const PAGE_LIMIT = Number(process.env.BENCH_QUERY_PAGE_LIMIT ?? 100);
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 180);
/** BENCH_HEAP=0: no inspector and no heap sweeps (the timed sweep alone). */
const HEAP = process.env.BENCH_HEAP !== "0";
/** Where to write a heap and a CPU profile of providerd's sweep (unset: none). */
const SNAPSHOT_DIR = process.env.BENCH_SNAPSHOT_DIR;
const RUNS = (process.env.BENCH_RUNS ?? "sweep,hanging").split(",");
const STORE = process.env.BENCH_STORE === "postgres" ? "postgres" : "sqlite";
const PER_TENANT = 1000; // bench genesis: credit and pending-lease limit per tenant

const load1 = () => Number(loadavg()[0]!.toFixed(2));

/** `leases` leases over the stack's tenants, ten tenants at a time, until all are ACTIVE. */
async function createActive(stack: Stack, leases: number): Promise<void> {
  const tenants = Math.max(1, Math.ceil(leases / PER_TENANT));
  // Ten tenants at a time: a hundred concurrent senders time the devnet's queries out.
  let next = 0;
  const sender = async () => {
    for (let i = next++; i < tenants; i = next++) {
      await stack.createLeasesFor(
        `tenant${i + 1}`,
        Math.min(PER_TENANT, leases - i * PER_TENANT),
        "docker-small",
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(10, tenants) }, sender));
  const provider = stack.keys.provider_uuid;
  await until(
    async () => (await stack.tenant.leasesByProvider(provider, "LEASE_STATE_ACTIVE")).length === leases,
    `${leases} leases ACTIVE`,
    // Listing every ACTIVE lease is heavy for the node at this size: poll slowly.
    { timeoutMs: 1_200_000, intervalMs: 5000 },
  );
}

/** A stack of three mocks (capacity for every lease) and providerd, `leases` of them ACTIVE. */
async function startStack(leases: number, backend: { timeout?: string }): Promise<Stack> {
  const big = JSON.stringify({ cpu_cores: 100_000, memory_mb: 1e9, disk_mb: 1e10 });
  const stack = new Stack();
  await stack.start(
    () => [{ MOCK_BACKEND_CAPACITY: big }, { MOCK_BACKEND_CAPACITY: big }, { MOCK_BACKEND_CAPACITY: big }],
    (s) => {
      const small = s.sku("docker-small");
      s.backendOverrides = [0, 1, 2].map(() => ({ skus: [small], ...backend }));
      s.extraConfig = {
        log_level: "warn",
        tx_poll_interval: "100ms",
        query_page_limit: PAGE_LIMIT,
        callback_rate_limit_rps: 100_000,
        callback_rate_limit_burst: 100_000,
        // The periodic sweep stays out of the way: the measured ones are asked for.
        reconciliation_interval: "1h",
      };
    },
    ["--profile", "bench", "--tenants", String(Math.max(1, Math.ceil(leases / PER_TENANT)))],
  );
  if (STORE === "postgres") await stack.moveToPostgres("bench");
  return stack;
}

/** Waits (bounded) for the machine to calm down after the burst; returns the load then. */
async function quiet(): Promise<number> {
  const end = Date.now() + QUIET_WAIT_S * 1000;
  while (load1() >= 2.5 && Date.now() < end) await new Promise((r) => setTimeout(r, 5000));
  return load1();
}

/** providerd's resident memory now, in MB (Linux /proc). */
function rssMb(pid: number | undefined): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return m === null ? 0 : Math.round(Number(m[1]) / 1024);
}

/** CPU seconds (user + system) each process of the stack has used so far (Linux /proc). */
function cpuSeconds(stack: Stack): Record<string, number> {
  const pids: [string, number | undefined][] = [
    ["providerd", stack.providerd?.child.pid],
    ["devnet", stack.devnet.proc.child.pid],
    ...stack.mocks.map((m, i): [string, number | undefined] => [`mock-${i + 1}`, m.child.pid]),
  ];
  return Object.fromEntries(
    pids.map(([name, pid]) => {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      return [name, (Number(fields[11]) + Number(fields[12])) / 100];
    }),
  );
}

/** CPU seconds used since `before` (a cpuSeconds reading), by process. */
function cpuSince(stack: Stack, before: Record<string, number>): Record<string, number> {
  const now = cpuSeconds(stack);
  return Object.fromEntries(
    Object.entries(now).map(([k, v]) => [k, Number((v - (before[k] ?? 0)).toFixed(2))]),
  );
}

/** A minimal Chrome DevTools Protocol session on providerd's inspector. */
class Inspector {
  #next = 1;
  readonly #waiting = new Map<number, (r: { result?: unknown; error?: unknown }) => void>();
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown };
      if (msg.id !== undefined) this.#waiting.get(msg.id)?.(msg);
    });
  }

  static async open(stderr: () => string): Promise<Inspector> {
    let url = "";
    await until(async () => {
      url = stderr().match(/Debugger listening on (ws:\/\/\S+)/)?.[1] ?? "";
      return url !== "";
    }, "providerd's inspector URL on stderr");
    const ws = new WebSocket(url);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    return new Inspector(ws);
  }

  call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, (r) => {
        this.#waiting.delete(id);
        if (r.error !== undefined) reject(new Error(`${method}: ${JSON.stringify(r.error)}`));
        else resolve(r.result);
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async heapUsed(): Promise<number> {
    const r = (await this.call("Runtime.evaluate", {
      expression: "process.memoryUsage().heapUsed",
      returnByValue: true,
    })) as { result: { value: number } };
    return r.result.value;
  }

  async gc(): Promise<void> {
    await this.call("HeapProfiler.collectGarbage");
  }
}

/**
 * One sweep with providerd's heap sampled: base after a full GC, the peak during it, the heap
 * after a full GC once it ended. `live`: each sample follows a full GC (every 100 ms), so the
 * peak is what the sweep holds at once, garbage excluded (the GCs slow that sweep down).
 */
async function measuredSweep(inspector: Inspector, socket: string, live: boolean) {
  await inspector.gc();
  const base = await inspector.heapUsed();
  let peak = base;
  let peakAtMs = 0;
  let sweeping = true;
  const t0 = performance.now();
  const sweep = requestSweep(socket).finally(() => {
    sweeping = false;
  });
  while (sweeping) {
    if (live) await inspector.gc();
    const used = await inspector.heapUsed();
    if (used > peak) [peak, peakAtMs] = [used, performance.now() - t0];
    await new Promise((r) => setTimeout(r, live ? 100 : 10));
  }
  const report = await sweep;
  await inspector.gc();
  return { report, base, peak, peakAtMs, after: await inspector.heapUsed() };
}

/** Bytes a sampling heap profile's tree holds. */
function sampledBytes(node: { selfSize: number; children: unknown[] }): number {
  let sum = node.selfSize;
  for (const c of node.children) sum += sampledBytes(c as typeof node);
  return sum;
}

/**
 * BENCH_SNAPSHOT_DIR: what one more sweep holds, by allocation site: V8's sampling heap
 * profiler runs through it, and the profile with the most live bytes (read every 300 ms) is
 * written as sweep-peak.heapprofile (bench/reconciler-heap-summary.ts reads it); then a CPU
 * profile of another sweep (sweep.cpuprofile).
 */
async function profiles(inspector: Inspector, socket: string): Promise<void> {
  const dir = SNAPSHOT_DIR as string;
  await inspector.gc();
  await inspector.call("HeapProfiler.startSampling", { samplingInterval: 8192 });
  let sweeping = true;
  const sweep = requestSweep(socket).finally(() => {
    sweeping = false;
  });
  let best: { head: { selfSize: number; children: unknown[] } } | undefined;
  while (sweeping) {
    await new Promise((r) => setTimeout(r, 300));
    const { profile } = (await inspector.call("HeapProfiler.getSamplingProfile")) as { profile: typeof best };
    if (profile !== undefined && (best === undefined || sampledBytes(profile.head) > sampledBytes(best.head)))
      best = profile;
  }
  await sweep;
  await inspector.call("HeapProfiler.stopSampling");
  writeFileSync(join(dir, "sweep-peak.heapprofile"), JSON.stringify(best ?? {}));
  // And a CPU profile of one more sweep (V8's sampling profiler, through the same session).
  await inspector.call("Profiler.enable");
  await inspector.call("Profiler.start");
  await requestSweep(socket);
  const { profile } = (await inspector.call("Profiler.stop")) as { profile: unknown };
  writeFileSync(join(dir, "sweep.cpuprofile"), JSON.stringify(profile));
  console.error(`sweep-peak.heapprofile and sweep.cpuprofile in ${dir}`);
}

/** The two heap-measuring sweeps, through providerd's inspector. */
async function heapSweeps(stack: Stack, socket: string) {
  const inspector = await Inspector.open(() => stack.providerd?.stderr() ?? "");
  try {
    const heap = await measuredSweep(inspector, socket, false);
    const held = await measuredSweep(inspector, socket, true);
    if (SNAPSHOT_DIR !== undefined) await profiles(inspector, socket);
    return {
      heap_sweep: heap.report,
      heap_before_mb: Math.round(heap.base / 2 ** 20),
      heap_peak_mb: Math.round(heap.peak / 2 ** 20),
      heap_after_gc_mb: Math.round(heap.after / 2 ** 20),
      heap_bytes_per_lease: Math.round((heap.peak - heap.base) / LEASES),
      held_sweep: held.report,
      heap_held_peak_mb: Math.round(held.peak / 2 ** 20),
      heap_held_bytes_per_lease: Math.round((held.peak - held.base) / LEASES),
      heap_held_peak_at_ms: Math.round(held.peakAtMs),
      heap_live_bytes_per_lease_between_sweeps: Math.round(heap.base / LEASES),
    };
  } finally {
    inspector.ws.close();
  }
}

async function sweepRun(): Promise<void> {
  const stack = await startStack(LEASES, {});
  try {
    const flags = process.env.FRED_NODE_FLAGS_PROVIDERD ?? "";
    if (HEAP) process.env.FRED_NODE_FLAGS_PROVIDERD = `${flags} --inspect=127.0.0.1:0`;
    await stack.startProviderd();
    process.env.FRED_NODE_FLAGS_PROVIDERD = flags;
    await createActive(stack, LEASES);
    const socket = controlSocketPath(stack.dir);
    // The first sweep after the burst settles whatever the burst left (placements adopted);
    // the second is the steady-state sweep the goal is about.
    const first = await requestSweep(socket);
    const { loadBefore, report, ms, cpu } = await timedSweep(stack, socket);
    const loadAfter = load1();
    const heapFigures = HEAP ? await heapSweeps(stack, socket) : {};
    console.log(
      JSON.stringify({
        bench: "reconciler_sweep_processes",
        store: STORE,
        leases: LEASES,
        backends: stack.mocks.length,
        query_page_limit: PAGE_LIMIT,
        first_sweep: first,
        sweep: report,
        sweep_ms: Math.round(ms),
        us_per_lease: Number(((ms * 1000) / LEASES).toFixed(1)),
        // Under load the wall time mostly measures the other sessions; CPU time does not.
        cpu_s: cpu,
        goal_s_at_100k: 5,
        ...heapFigures,
        goal_heap_bytes_per_lease: 1024,
        providerd_rss_mb: rssMb(stack.providerd?.child.pid),
        load1_before: loadBefore,
        load1: loadAfter,
      }),
    );
  } finally {
    await stack.close();
  }
}

/** One on-demand sweep once the machine is quiet: its report, wall time and every process's CPU. */
async function timedSweep(stack: Stack, socket: string) {
  const loadBefore = await quiet();
  const cpu0 = cpuSeconds(stack);
  const t0 = performance.now();
  const report = await requestSweep(socket);
  const ms = performance.now() - t0;
  return { loadBefore, report, ms, cpu: cpuSince(stack, cpu0) };
}

async function hangingRun(): Promise<void> {
  const stack = await startStack(
    HANGING_LEASES,
    BACKEND_TIMEOUT === undefined ? {} : { timeout: BACKEND_TIMEOUT },
  );
  try {
    await stack.startProviderd();
    await createActive(stack, HANGING_LEASES);
    const socket = controlSocketPath(stack.dir);
    const settled = await requestSweep(socket);
    await stack.stopMock(2);
    stack.mockEnvs[2] = { ...stack.mockEnvs[2]!, MOCK_BACKEND_HANG_INVENTORY: "1" };
    await stack.restartMock(2);
    const { loadBefore, report, ms, cpu } = await timedSweep(stack, socket);
    console.log(
      JSON.stringify({
        bench: "reconciler_sweep_processes_hanging",
        store: STORE,
        leases: HANGING_LEASES,
        backends: stack.mocks.length,
        hanging: "mock-3",
        backend_timeout: BACKEND_TIMEOUT ?? "default",
        query_page_limit: PAGE_LIMIT,
        settled_sweep: settled,
        sweep: report,
        sweep_ms: Math.round(ms),
        cpu_s: cpu,
        goal_s: 5,
        load1_before: loadBefore,
        load1: load1(),
      }),
    );
  } finally {
    await stack.close();
  }
}

if (RUNS.includes("sweep")) await sweepRun();
if (RUNS.includes("hanging")) await hangingRun();
