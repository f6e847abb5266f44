import assert from "node:assert/strict";
import { chmodSync, copyFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { launchFred, runFred, until } from "../../support/index.ts";
import { type MockReady, SECRETS, SIDS, Stack } from "../e2e/stack.ts";

/**
 * Growing a fleet: providerd runs on one mock backend and places leases there; then a
 * second, empty backend is listed in the config and pinned with `fred placement
 * add-backend`; after a restart the old leases stay where they are and new ones are
 * routed to both backends by load.
 */
const stack = new Stack();

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-small")] }];
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

/** Starts mock-2 (one CPU core: a single lease makes its load exceed mock-1's) and lists it. */
async function startSecondMock(): Promise<void> {
  const env = {
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SIDS[1]!,
    MOCK_BACKEND_CALLBACK_SECRET: SECRETS[1]!,
    MOCK_BACKEND_NAME: "mock-2",
    MOCK_BACKEND_DB_PATH: join(stack.dir, "mock-2.db"),
    MOCK_BACKEND_CAPACITY: JSON.stringify({ cpu_cores: 1, memory_mb: 8192, disk_mb: 65536 }),
  };
  stack.mockEnvs.push(env);
  stack.mocks.push(
    await launchFred<MockReady>(["backend", "mock"], { label: "mock-2", env, readyTimeoutMs: 120_000 }),
  );
  stack.writeConfig();
}

function addBackend(name: string) {
  return runFred(["placement", "add-backend", "--config", stack.configPath, "--name", name]);
}

async function owners(leases: readonly string[]): Promise<string[]> {
  return (await stack.workloads(leases)).map((w) => w.backend).sort();
}

describe("fred placement add-backend: growing from one backend to two", () => {
  it("pins the new backend, and providerd then routes new leases to both by load", async () => {
    const old = await stack.createLeases(2, "docker-small");
    await stack.waitState(old, "LEASE_STATE_ACTIVE");
    assert.deepEqual(await owners(old), ["mock-1", "mock-1"]);
    await stack.stopProviderd();

    await startSecondMock();
    // Listed but not pinned: providerd refuses to talk to storage it has no pin for.
    const refused = await runFred(["providerd", "-c", stack.configPath]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /mock-2 have no pinned storage ID/);

    // The whole proposed fleet must answer: with mock-1 down nothing changes.
    await stack.stopMock(0);
    try {
      const down = await addBackend("mock-2");
      assert.equal(down.code, 1);
      const refusal = JSON.parse(down.stdout) as { ok: false; code: string; error: string };
      assert.equal(refusal.code, "ERR_PLACEMENT_MEMBERSHIP_REFUSED");
      assert.match(refusal.error, /backend mock-1 did not answer complete inventories/);
    } finally {
      await stack.restartMock(0);
    }
    const before = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
    try {
      assert.deepEqual([...before.fleet.pins().keys()], ["mock-1"]);
    } finally {
      before.close();
    }

    const r = await addBackend("mock-2");
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      ok: true;
      backup: string;
      added: { name: string; storage_id: string };
      baselines: { name: string; provisions: number }[];
    };
    assert.deepEqual([out.added.name, out.added.storage_id], ["mock-2", SIDS[1]]);
    assert.deepEqual(
      out.baselines.map((b) => [b.name, b.provisions]),
      [["mock-1", 2]],
    );
    assert.equal(statSync(out.backup).mode & 0o777, 0o600);
    const backup = PlacementStore.openCopy(out.backup);
    try {
      // The backup is the store as it was before the change, marked as a copy.
      assert.deepEqual([...backup.fleet.pins().keys()], ["mock-1"]);
      assert.ok(backup.copies.takenAt() !== undefined);
    } finally {
      backup.close();
    }
    const again = await addBackend("mock-2");
    assert.equal(again.code, 1);
    assert.match(JSON.parse(again.stdout).error, /mock-2 is already pinned/);

    // Both idle enough at start: the empty mock-2 has the lower load and takes the next lease.
    await stack.startProviderd();
    const [first] = await stack.createLeases(1, "docker-small");
    await stack.waitState([first!], "LEASE_STATE_ACTIVE");
    assert.deepEqual(await owners([first!]), ["mock-2"]);
    // A restart reads /stats afresh: mock-2 is now half full (0.5 of 1 core), so mock-1 wins.
    await stack.stopProviderd();
    await stack.startProviderd();
    const [second] = await stack.createLeases(1, "docker-small");
    await stack.waitState([second!], "LEASE_STATE_ACTIVE");
    assert.deepEqual(await owners([second!]), ["mock-1"]);
    assert.deepEqual(await owners(old), ["mock-1", "mock-1"], "old leases stay on mock-1");
  });

  it("refuses a backend that is not in the config", async () => {
    await stack.stopProviderd();
    const missing = await addBackend("mock-9");
    assert.equal(missing.code, 1);
    assert.match(JSON.parse(missing.stdout).error, /mock-9 is not in the config/);
  });

  it("a snapshot taken under write load, restored and attested, lets providerd start and catch up", async () => {
    await stack.startProviderd();
    const snaps = join(stack.dir, "snapshots");
    // Leases arrive (attempts and placements are written) while the snapshot is taken.
    const [created, snap] = await Promise.all([
      stack.createLeases(3, "docker-small"),
      runFred(["placement", "snapshot", "--config", stack.configPath, "--dir", snaps]),
    ]);
    assert.equal(snap.code, 0, snap.stderr);
    const set = JSON.parse(snap.stdout) as {
      ok: true;
      dir: string;
      files: { placement: string; payload: string };
    };
    await stack.waitState(created, "LEASE_STATE_ACTIVE");
    const inspect = await runFred(["placement", "inspect", "--file", set.files.placement]);
    assert.equal(inspect.code, 0, inspect.stderr);
    const copy = JSON.parse(inspect.stdout) as { copy_taken_at: string | null; backends: { name: string }[] };
    assert.notEqual(copy.copy_taken_at, null);
    assert.deepEqual(
      copy.backends.map((b) => b.name),
      ["mock-1", "mock-2"],
    );

    // Lose the live stores; restore the snapshot set in their place.
    await stack.stopProviderd();
    for (const [from, to] of [
      [set.files.placement, stack.placementPath],
      [set.files.payload, stack.payloadPath],
    ] as const) {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${to}${suffix}`, { force: true });
      copyFileSync(from, to);
      chmodSync(to, 0o600);
    }
    const refused = await runFred(["providerd", "-c", stack.configPath]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is a copy taken at .* attest it first/);

    const dry = await runFred([
      "placement",
      "repair",
      "--config",
      stack.configPath,
      "--attest-restored-backup",
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(JSON.parse(dry.stdout).attested, false);
    const apply = await runFred([
      "placement",
      "repair",
      "--config",
      stack.configPath,
      "--attest-restored-backup",
      "--apply",
    ]);
    assert.equal(apply.code, 0, apply.stderr);
    const attested = JSON.parse(apply.stdout) as { attested: boolean; backup: string };
    assert.equal(attested.attested, true);
    assert.equal(statSync(attested.backup).mode & 0o777, 0o600);

    await stack.startProviderd();
    // The sweep adopts whatever the copy missed: every lease is placed again.
    await until(() => {
      const store = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
      try {
        return created.every((l) => store.placements.placement(l)?.state === "confirmed");
      } finally {
        store.close();
      }
    }, "leases created during the snapshot placed after the restore");
  });
});
