/**
 * One reconciler sweep of providerd's real code over in-process fakes at the process
 * boundary: Reconciler.sweep → collect (the chain's PENDING/ACTIVE listings, each backend's
 * paired inventories, the placement store: a real SQLite file) → the pure plan → act (each
 * lease's task in its serial queue; here every lease is ACTIVE and ready on its owner, so
 * the act phase re-reads each lease and sends one reconcile_custom_domain per lease to the
 * fake client). What it
 * does not measure: HTTP, JSON decoding and paging of real inventories and listings.
 *
 * Runs:
 * - `sweep`: BENCH_LEASES (default 100000) leases over 3 backends. Goals: ≤ 5 s wall, and
 *   ≤ 1 KB of heap per lease. Two heap figures: `collect_plan_retained_bytes_per_lease`,
 *   what collect + plan hold at once after a full GC, and
 *   `heap_bytes_per_lease`, the peak heap during the whole sweep (sampled every 10 ms,
 *   garbage included) minus the heap before it, fixtures already built.
 * - `hanging`: BENCH_HANGING_LEASES (default 10000) leases, one backend never answering its
 *   inventory: the sweep abandons it when no page came for BENCH_DEADLINE_MS (default
 *   3000) and acts on the rest. Goal ≤ 5 s.
 * Prints one JSON line per run, with the load average.
 *
 * Usage: npm run bench -- reconciler
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { ChainLease, LeaseStateName } from "../src/chain/port.ts";
import { systemClock } from "../src/core/clock.ts";
import { plan } from "../src/core/reconcile/index.ts";
import type { BackendClient, Inventory, ProvisionEntry } from "../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../src/provider/config/index.ts";
import { Lifecycle } from "../src/provider/lifecycle/index.ts";
import { collect } from "../src/provider/reconciler/collect.ts";
import { Reconciler } from "../src/provider/reconciler/index.ts";
import { PlacementStore } from "../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../test/provider/config/fixtures.ts";
import { lifecycleDeps, recordingChain } from "../test/provider/lifecycle/deps.ts";

// A full GC between phases makes the retained-heap figure exact (npm run bench passes no flags).
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const BACKENDS = ["b1", "b2", "b3"];
const SIDS = [
  "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f",
  "7a2d3b5f-9c4e-4d6f-8a71-8b9cad0e1f30",
  "8b3e4c60-ad5f-4e70-9b82-9cadbe1f2041",
];
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";

function leaseUuid(i: number): string {
  return `0190f3a2-7c1e-7000-8000-${i.toString(16).padStart(12, "0")}`;
}

/** A backend client that answers from memory; `hang` makes its inventory wait for the abort. */
function fakeClient(name: string, storageId: string, provisions: ProvisionEntry[], hang: boolean) {
  const accepted = { kind: "accepted", status: 200, body: undefined } as const;
  return {
    name,
    inventory: (signal?: AbortSignal): Promise<Inventory> =>
      hang
        ? new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)))
        : Promise.resolve({ storageId, provisions, retentions: [] }),
    reconcileCustomDomain: async () => accepted,
    provisionInfo: async () => undefined,
    close: async () => {},
  } as unknown as BackendClient;
}

/** What collect + plan hold at once (the sweep's working set), measured after a full GC. */
async function collectPlanHeld(deps: ReturnType<typeof lifecycleDeps>, deadlineMs: number): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  const collected = await collect(deps, deadlineMs, new AbortController().signal, deadlineMs);
  const planned = plan(collected.input);
  gc();
  const held = process.memoryUsage().heapUsed - before;
  if (planned.actions.length === 0 && collected.input.chain.length > 0)
    throw new Error("the plan decided nothing");
  return held;
}

async function run(label: string, leases: number, hangingBackend: string | undefined, deadlineMs: number) {
  const dir = mkdtempSync(join(tmpdir(), "fred-bench-reconciler-"));
  const c = baseConfig();
  c.backends = BACKENDS.map((name, i) => ({
    name,
    url: `http://127.0.0.1:${9000 + i}`,
    hmac_secret: `bench-reconciler-secret-${i}-0123456789abcdef`,
    default: i === 0,
  }));
  const config = parseProviderConfig(yamlOf(c));
  const now = systemClock.now();
  const store = PlacementStore.create(
    join(dir, "placements.db"),
    PROVIDER_UUID,
    BACKENDS.map((name, i) => ({ name, storageId: SIDS[i]!, baseline: { provisions: 0, retentions: 0 } })),
    now,
  );
  const chainLeases: ChainLease[] = [];
  const provisions = new Map<string, ProvisionEntry[]>(BACKENDS.map((b) => [b, []]));
  store.placements.batch(() => {
    for (let i = 0; i < leases; i++) {
      const uuid = leaseUuid(i + 1);
      const owner = BACKENDS[i % BACKENDS.length]!;
      store.placements.adoptPlacement(uuid, owner, now - 3_600_000);
      provisions.get(owner)!.push({ leaseUuid: uuid, status: "ready" } as unknown as ProvisionEntry);
      chainLeases.push({
        uuid,
        tenant: "manifest1benchtenant",
        providerUuid: PROVIDER_UUID,
        state: "LEASE_STATE_ACTIVE",
        items: [{ skuUuid: SKU, quantity: 1n, serviceName: "", customDomain: "", lockedPrice: undefined }],
        metaHash: "",
      } as unknown as ChainLease);
    }
  });
  await store.durable();
  const byUuid = new Map(chainLeases.map((l) => [l.uuid, l]));
  const clients = new Map(
    BACKENDS.map((b, i) => [b, fakeClient(b, SIDS[i]!, provisions.get(b)!, b === hangingBackend)]),
  );
  const chain = recordingChain([], {
    leasesByProvider: async (_p: string, state: LeaseStateName | undefined) =>
      state === "LEASE_STATE_ACTIVE" ? chainLeases : [],
    // The act phase re-reads each ACTIVE lease it pushes custom domains for.
    getLease: async (uuid: string) => byUuid.get(uuid),
  });
  const deps = lifecycleDeps({ config, chain, store, clock: systemClock as never, clients });
  const reconciler = new Reconciler({
    ...deps,
    lifecycle: new Lifecycle(deps),
    feedLive: async () => {},
    clock: systemClock,
    logger: deps.logger,
    readDeadlineMs: deadlineMs,
    inventoryStallMs: deadlineMs,
  });

  const held = await collectPlanHeld(deps, deadlineMs);

  gc();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  };
  const sampler = setInterval(sample, 10);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const report = await reconciler.sweep(new AbortController().signal);
  await deps.queue.idle();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  sample();
  clearInterval(sampler);
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    bench: "reconciler",
    run: label,
    leases,
    hanging: hangingBackend ?? null,
    read_deadline_ms: deadlineMs,
    outcome: report.outcome,
    answered: report.answered,
    actions: report.actions,
    seconds: Number(seconds.toFixed(3)),
    cpu_seconds: Number(((used.user + used.system) / 1e6).toFixed(3)),
    heap_bytes_per_lease: Math.round((peak - base) / leases),
    collect_plan_retained_bytes_per_lease: Math.round(held / leases),
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
  };
}

const big = Number(process.env.BENCH_LEASES ?? 100_000);
const hanging = Number(process.env.BENCH_HANGING_LEASES ?? 10_000);
const deadline = Number(process.env.BENCH_DEADLINE_MS ?? 3_000);
// The Clock's timers are unref'd (a daemon's are): this keeps the bench alive while only they run.
const keepAlive = setInterval(() => {}, 1_000);
console.log(JSON.stringify(await run("sweep", big, undefined, deadline)));
console.log(JSON.stringify(await run("hanging", hanging, "b3", deadline)));
clearInterval(keepAlive);
