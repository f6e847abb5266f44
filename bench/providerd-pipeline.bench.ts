/**
 * providerd's in-process provisioning pipeline, as far as it exists today:
 *   lease_created event → route (pure) → write-ahead attempt written and fsynced (real
 *   SQLite file, WAL, group commit: the attempts of one event-loop turn share one
 *   transaction and one fsync, as providerd's Provisioner does) → provision call on an
 *   in-process fake client.
 * A back-pressured producer keeps at most WINDOW events in flight. Every provision call
 * checks that its attempt's transaction has already been fsynced. Prints one JSON line per
 * run: events/s, elapsed seconds, peak heap.
 *
 * Usage: npm run bench -- providerd-pipeline   (BENCH_EVENTS=100000,1000000 and BENCH_WINDOW=8192 by default)
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { type RoutableBackend, route } from "../src/provider/router.ts";
import { type Attempt, PlacementStore } from "../src/provider/store/index.ts";

const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
const SKUS = ["0190f3a2-7c1e-7000-8000-00000000000a", "0190f3a2-7c1e-7000-8000-00000000000b"];
const WINDOW = Number(process.env.BENCH_WINDOW ?? 8192);
const BACKENDS: RoutableBackend[] = [
  { name: "docker-1", skus: SKUS, isDefault: true, fenced: false, draining: false },
  { name: "docker-2", skus: SKUS, isDefault: false, fenced: false, draining: false },
  { name: "docker-3", skus: [SKUS[0]!], isDefault: false, fenced: false, draining: true },
];
const STORAGE_IDS = [
  "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f",
  "7a2d3b5f-9c4e-4d6f-8a71-8b9cad0e1f30",
  "8b3e4c60-ad5f-4e70-9b82-9cadbe1f2041",
];

/** The attempt plus the number of fsyncs done when it was written: a later one must cover it. */
interface TrackedAttempt extends Attempt {
  fsyncsAtWrite: number;
}

interface LeaseCreated {
  leaseUuid: string;
  tenant: string;
  items: { sku: string; quantity: number }[];
}

function leaseUuid(i: number): string {
  const hex = i.toString(16).padStart(12, "0");
  return `0190f3a2-7c1e-7000-8000-${hex}`;
}

async function run(events: number): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "fred-bench-pipeline-"));
  const store = PlacementStore.create(
    join(dir, "placements.db"),
    PROVIDER,
    BACKENDS.map((b, i) => ({
      name: b.name,
      storageId: STORAGE_IDS[i]!,
      baseline: { provisions: 0, retentions: 0 },
    })),
    Date.now(),
  );
  let roundRobin = 0;
  let calls = 0;
  let violations = 0;
  // The fake backend client: accepts every provision asynchronously, like a 202.
  const fakeProvision = async (attempt: TrackedAttempt) => {
    if (store.database.stats.fsyncs <= attempt.fsyncsAtWrite) violations++;
    calls++;
    await Promise.resolve();
    return { kind: "accepted" as const, status: 202, body: { provision_id: attempt.operationId } };
  };

  let peakHeap = process.memoryUsage().heapUsed;
  const sampler = setInterval(() => {
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  }, 20);

  const handle = async (event: LeaseCreated) => {
    const decision = route({ sku: event.items[0]!.sku, backends: BACKENDS, roundRobin });
    roundRobin = decision.roundRobin;
    if (decision.kind !== "backend") throw new Error(`unroutable ${event.leaseUuid}`);
    const attempt: TrackedAttempt = {
      leaseUuid: event.leaseUuid,
      backend: decision.backend,
      operationId: randomUUID(),
      kind: "provision",
      createdAt: Date.now(),
      fsyncsAtWrite: store.database.stats.fsyncs,
    };
    // As providerd's Provisioner: the attempt is fsynced before anyone may call a backend.
    if (store.placements.recordAttempt(attempt) !== "recorded") throw new Error("lease busy");
    await store.placements.durable();
    await fakeProvision(attempt);
  };

  const cpuStart = process.cpuUsage();
  const started = performance.now();
  let inFlight = 0;
  let wake: (() => void) | undefined;
  let failure: unknown;
  for (let i = 1; i <= events; i++) {
    if (inFlight >= WINDOW) await new Promise<void>((r) => (wake = r));
    inFlight++;
    const event: LeaseCreated = {
      leaseUuid: leaseUuid(i),
      tenant: "manifest1tenant",
      items: [{ sku: SKUS[i % 2]!, quantity: 1 }],
    };
    handle(event)
      .catch((err) => {
        failure ??= err;
      })
      .finally(() => {
        inFlight--;
        if (wake && inFlight < WINDOW / 2) {
          const w = wake;
          wake = undefined;
          w();
        }
      });
  }
  while (inFlight > 0) await new Promise<void>((r) => (wake = r));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  clearInterval(sampler);
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  if (failure) throw failure;
  const counts = store.placements.counts();
  const { transactions, fsyncs } = store.database.stats;
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    bench: "providerd-pipeline",
    events,
    seconds: Number(seconds.toFixed(3)),
    events_per_s: Math.round(events / seconds),
    peak_heap_mb: Number((peakHeap / 1024 / 1024).toFixed(1)),
    // What the OS gave the process at most (the young generation's garbage included).
    peak_rss_mb: Number((process.resourceUsage().maxRSS / 1024).toFixed(1)),
    attempts_committed: counts.attempts,
    provision_calls: calls,
    calls_before_fsync: violations,
    fsyncs,
    commit_batches: transactions,
    cpu_seconds: Number(cpuSeconds.toFixed(2)),
    // The machine is shared: the 1-minute load average says how much CPU we really had.
    load_avg_1m: Number(loadavg()[0]!.toFixed(2)),
    window: WINDOW,
    durability: "WAL, group commit, fsync before every call",
  };
}

const sizes = (process.env.BENCH_EVENTS ?? "100000,1000000").split(",").map(Number);
for (const n of sizes) {
  const result = await run(n);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (result.attempts_committed !== n || result.provision_calls !== n || result.calls_before_fsync !== 0) {
    process.stderr.write("pipeline invariant broken\n");
    process.exitCode = 1;
  }
}
