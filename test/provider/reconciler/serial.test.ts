import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ChainLease, LeaseStateName } from "../../../src/chain/port.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { createBackendClients } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Lifecycle } from "../../../src/provider/lifecycle/index.ts";
import { Reconciler } from "../../../src/provider/reconciler/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type MockProcess, spawnMock } from "../../backend/mock/process.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain } from "../lifecycle/deps.ts";

/**
 * How sweeps are scheduled and what they report, against a real (empty) mock backend:
 * sweeps never overlap, and however many are asked for during one, one more runs after
 * it; a degraded sweep (a configured backend did not answer: here a fenced one) does not
 * advance the last-success timestamp, a complete one does.
 */
const SECRET = "reconciler-serial-secret-0123456789abcdef";
const SID = "6f7a8b9c-adbe-4fc0-9d1e-2f3a4b5c6d7e";
const dir = mkdtempSync(join(tmpdir(), "fred-reconciler-serial-"));
const never = new AbortController().signal;
let mock: MockProcess;

before(async () => {
  mock = await spawnMock({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SID,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_NAME: "one",
  });
});

after(async () => {
  await mock?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A reconciler over the mock ("one") and, when `fenced`, a second backend that is fenced. */
async function setup(
  fenced: boolean,
  listings: (state: LeaseStateName | undefined) => Promise<ChainLease[]>,
  whileSweeping?: <T>(sweep: () => Promise<T>) => Promise<T>,
) {
  const c = baseConfig();
  c.backends = [
    { name: "one", url: mock.ready.url, hmac_secret: SECRET, default: true },
    ...(fenced ? [{ name: "two", url: mock.ready.url, hmac_secret: `${SECRET}-two`, fenced: true }] : []),
  ];
  const config = parseProviderConfig(yamlOf(c));
  const pins = new Map([
    ["one", SID],
    ["two", newUuidV4()],
  ]);
  const clock = new ManualClock(Date.now());
  const store = PlacementStore.create(
    join(dir, `p-${newUuidV4()}.db`),
    PROVIDER_UUID,
    config.backends.map((b) => ({
      name: b.name,
      storageId: pins.get(b.name)!,
      baseline: { provisions: 0, retentions: 0 },
    })),
    clock.now(),
  );
  const clients = await createBackendClients(config, pins, systemClock);
  const chain = recordingChain([], {
    leasesByProvider: (_provider, state) => listings(state),
    getLease: async () => undefined,
  });
  const deps = lifecycleDeps({ config, chain, store, clock, clients });
  const reconciler = new Reconciler({
    ...deps,
    lifecycle: new Lifecycle(deps),
    feedLive: async () => {},
    clock,
    logger: deps.logger,
    ...(whileSweeping === undefined ? {} : { whileSweeping }),
  });
  const close = async () => {
    store.close();
    for (const client of clients.values()) await client.close();
  };
  return { reconciler, clock, close };
}

async function value(r: Reconciler, metric: "lastSuccess" | "sweepComplete"): Promise<number> {
  return (await r.metrics[metric].get()).values[0]?.value ?? 0;
}

describe("reconciler sweeps", () => {
  it("never overlap: sweeps asked for during one run once, after it", async () => {
    let listed = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reached!: () => void;
    const firstListing = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const { reconciler, close } = await setup(false, async (state) => {
      if (state === "LEASE_STATE_PENDING") {
        listed++;
        if (listed === 1) {
          reached();
          await gate;
        }
      }
      return [];
    });
    try {
      const first = reconciler.sweep(never);
      await firstListing;
      const second = reconciler.sweep(never);
      const third = reconciler.sweep(never);
      assert.equal(second, third, "requests during a sweep share the one that follows it");
      assert.equal(listed, 1, "nothing else starts while the first sweep runs");
      release();
      const reports = await Promise.all([first, second, third]);
      assert.equal(listed, 2, "exactly one more sweep ran");
      assert.deepEqual(
        reports.map((r) => r.outcome),
        ["complete", "complete", "complete"],
      );
      await reconciler.sweep(never);
      assert.equal(listed, 3, "a sweep asked for when none runs starts at once");
      assert.equal(reconciler.done, true);
    } finally {
      await close();
    }
  });

  it("a degraded sweep does not advance the last-success timestamp; a complete one does", async () => {
    const degraded = await setup(true, async () => []);
    try {
      const report = await degraded.reconciler.sweep(never);
      assert.equal(report.outcome, "degraded");
      assert.deepEqual(report.answered, ["one"]);
      assert.equal(await value(degraded.reconciler, "lastSuccess"), 0);
      assert.equal(await value(degraded.reconciler, "sweepComplete"), 0);
      assert.equal(degraded.reconciler.backendHealthy.get("two"), false);
      assert.equal(degraded.reconciler.done, true, "every unfenced backend answered: ready");
    } finally {
      await degraded.close();
    }
    const complete = await setup(false, async () => []);
    try {
      assert.equal((await complete.reconciler.sweep(never)).outcome, "complete");
      assert.equal(await value(complete.reconciler, "lastSuccess"), complete.clock.now() / 1000);
      assert.equal(await value(complete.reconciler, "sweepComplete"), 1);
    } finally {
      await complete.close();
    }
  });

  it("runs each whole sweep inside whileSweeping (providerd lifts its heap cap there)", async () => {
    const log: string[] = [];
    let inside = false;
    const { reconciler, close } = await setup(
      false,
      async (state) => {
        log.push(`list ${state ?? "all"} inside=${inside}`);
        return [];
      },
      async (sweep) => {
        inside = true;
        log.push("enter");
        try {
          return await sweep();
        } finally {
          inside = false;
          log.push("exit");
        }
      },
    );
    try {
      assert.equal((await reconciler.sweep(never)).outcome, "complete");
      assert.equal(log[0], "enter");
      assert.equal(log.at(-1), "exit");
      const listings = log.slice(1, -1);
      assert.ok(listings.length >= 2, `the sweep listed the chain: ${log.join(", ")}`);
      assert.ok(
        listings.every((l) => l.startsWith("list ") && l.endsWith("inside=true")),
        log.join(", "),
      );
    } finally {
      await close();
    }
  });
});
