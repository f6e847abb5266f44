import assert from "node:assert/strict";
import { closeSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { launchScript } from "../../support/index.ts";
import {
  attempt,
  code,
  createStore,
  databasePerTest,
  LEASE_1,
  LEASE_2,
  OP_1,
  OP_2,
  PROVIDER,
  T0,
} from "./fixture.ts";

const files = databasePerTest("fred-placements-");
const fresh = () => createStore(files.path);

describe("placements: attempts and settlement", () => {
  it("records a batch in one transaction; a second attempt for a busy lease is refused", () => {
    using store = fresh();
    assert.deepEqual(
      store.placements.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_1, "two", OP_2)]),
      ["recorded", "lease-busy"],
    );
    assert.deepEqual(store.placements.unresolvedAttempts(), [attempt(LEASE_1, "one", OP_1)]);
  });

  it("reads only the attempts created by a cutoff (the overdue ones), oldest first", () => {
    using store = fresh();
    store.placements.recordAttempts([
      { ...attempt(LEASE_2, "two", OP_2), createdAt: T0 + 5 },
      { ...attempt(LEASE_1, "one", OP_1), createdAt: T0 + 1 },
    ]);
    assert.deepEqual(store.placements.attemptsCreatedBy(T0), []);
    assert.deepEqual(
      store.placements.attemptsCreatedBy(T0 + 1).map((a) => a.leaseUuid),
      [LEASE_1],
    );
    assert.deepEqual(
      store.placements.attemptsCreatedBy(T0 + 5).map((a) => a.leaseUuid),
      [LEASE_1, LEASE_2],
    );
  });

  it("a store call inside batch() joins its transaction: a throw rolls back the whole batch", () => {
    using store = fresh();
    store.placements.recordAttempt(attempt(LEASE_1, "one", OP_1));
    assert.throws(() =>
      store.placements.batch(() => {
        store.placements.settleOperation(LEASE_1, OP_1, "success", T0 + 2);
        store.placements.recordAttempt(attempt(LEASE_2, "three", OP_2)); // unpinned backend: throws
      }),
    );
    assert.equal(store.placements.attemptFor(LEASE_1)?.operationId, OP_1, "the settlement was rolled back");
    assert.equal(store.placements.placement(LEASE_1), undefined);
  });

  it("refuses attempts naming an unpinned backend or a non-v4 operation id", () => {
    using store = fresh();
    assert.equal(
      code(() => store.placements.recordAttempt(attempt(LEASE_1, "three", OP_1))),
      "ERR_PLACEMENT_UNKNOWN_BACKEND",
    );
    assert.equal(
      code(() => store.placements.recordAttempt(attempt(LEASE_1, "one", LEASE_2))),
      "ERR_PLACEMENT_ATTEMPT",
    );
    assert.equal(store.placements.counts().attempts, 0);
  });

  it("success callback confirms the attempted backend; the same id again is unknown", () => {
    using store = fresh();
    store.placements.recordAttempt(attempt(LEASE_1, "two", OP_1));
    // Another (stale) operation id for the same lease settles nothing.
    assert.deepEqual(store.placements.settleOperation(LEASE_1, OP_2, "success", T0 + 4), {
      kind: "unknown-operation",
    });
    assert.equal(store.placements.clearRefusedAttempt(LEASE_1, OP_2), undefined);
    // The exact id, reported by a backend other than the attempted one, settles nothing either.
    assert.deepEqual(store.placements.settleOperation(LEASE_1, OP_1, "success", T0 + 4, "one"), {
      kind: "unknown-operation",
    });
    assert.equal(store.placements.attemptFor(LEASE_1)?.operationId, OP_1);
    assert.equal(store.placements.hasAttempt(LEASE_1), true);
    assert.equal(store.placements.hasAttempt(LEASE_2), false);
    assert.equal(
      store.placements.hasAttempt(LEASE_1.toUpperCase()),
      false,
      "a malformed UUID names no attempt",
    );
    const r = store.placements.settleOperation(LEASE_1, OP_1, "success", T0 + 5);
    assert.equal(r.kind, "settled");
    assert.deepEqual(store.placements.placement(LEASE_1), {
      leaseUuid: LEASE_1,
      state: "confirmed",
      owner: "two",
      lifecycleId: OP_1,
      candidates: [],
      updatedAt: T0 + 5,
    });
    assert.equal(store.placements.attemptFor(LEASE_1), undefined);
    assert.equal(store.placements.hasAttempt(LEASE_1), false, "settled: the attempt row is gone");
    assert.deepEqual(store.placements.settleOperation(LEASE_1, OP_1, "success", T0 + 6), {
      kind: "unknown-operation",
    });
  });

  it("a failed callback places an unplaced lease where it failed; a definite refusal places it nowhere", () => {
    using store = fresh();
    store.placements.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_2, "one", OP_2)]);
    const failed = store.placements.settleOperation(LEASE_1, OP_1, "failed", T0);
    assert.equal(failed.kind, "settled");
    // The backend keeps the failed operation's record, so the lease is not new work elsewhere.
    assert.equal(store.placements.placement(LEASE_1)?.owner, "one");
    assert.equal(store.placements.placement(LEASE_1)?.state, "confirmed");
    assert.equal(
      store.placements.placement(LEASE_1)?.lifecycleId,
      undefined,
      "the failed operation grants no lifecycle",
    );
    assert.equal(store.placements.clearRefusedAttempt(LEASE_2, OP_2)?.leaseUuid, LEASE_2);
    assert.equal(store.placements.placement(LEASE_2), undefined, "a refusal: the backend holds nothing");
    assert.equal(store.placements.clearRefusedAttempt(LEASE_2, OP_2), undefined);
    assert.equal(store.placements.counts().attempts, 0);
  });

  it("retireAttempt removes a lease's attempt only for the attempted backend", () => {
    using store = fresh();
    store.placements.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_2, "two", OP_2)]);
    // Wrong backend: nothing changes.
    assert.equal(store.placements.retireAttempt(LEASE_1, "two"), false);
    assert.equal(store.placements.retireAttempt(LEASE_1, "three"), false);
    assert.equal(store.placements.attemptFor(LEASE_1)?.operationId, OP_1);
    // Right backend: the row goes, and only that lease's row; nothing is confirmed.
    assert.equal(store.placements.retireAttempt(LEASE_1, "one"), true);
    assert.equal(store.placements.attemptFor(LEASE_1), undefined);
    assert.equal(store.placements.placement(LEASE_1), undefined);
    assert.equal(store.placements.attemptFor(LEASE_2)?.operationId, OP_2);
    // None left (or a malformed lease UUID): false, nothing changes.
    assert.equal(store.placements.retireAttempt(LEASE_1, "one"), false);
    assert.equal(store.placements.retireAttempt(LEASE_1.toUpperCase(), "two"), false);
    assert.deepEqual(store.placements.counts(), { placements: 0, conflicts: 0, attempts: 1 });
    // The removal is committed: a reopened store agrees.
    store.close();
    using again = PlacementStore.open(files.path, PROVIDER);
    assert.deepEqual(again.placements.unresolvedAttempts(), [attempt(LEASE_2, "two", OP_2)]);
  });

  it("positive inventory confirms attempts at that backend; silence clears nothing", () => {
    using store = fresh();
    store.placements.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_2, "two", OP_2)]);
    const out = store.placements.applyPositiveInventory("one", [LEASE_1], T0 + 9);
    assert.deepEqual(out, { confirmed: [LEASE_1], conflicts: [], unrecorded: [] });
    assert.equal(
      store.placements.placement(LEASE_1)?.lifecycleId,
      OP_1,
      "the attempt's id becomes the lifecycle id",
    );
    // Backend "two" reporting nothing is not evidence: LEASE_2's attempt stays.
    assert.deepEqual(store.placements.applyPositiveInventory("two", [], T0 + 9), {
      confirmed: [],
      conflicts: [],
      unrecorded: [],
    });
    assert.equal(store.placements.attemptFor(LEASE_2)?.operationId, OP_2);
  });

  it("a report from another backend than the attempted one is a durable conflict", () => {
    using store = fresh();
    store.placements.recordAttempt(attempt(LEASE_1, "one", OP_1));
    const out = store.placements.applyPositiveInventory("two", [LEASE_1], T0);
    assert.deepEqual(out.conflicts, [LEASE_1]);
    assert.deepEqual(store.placements.placement(LEASE_1)?.candidates, ["one", "two"]);
    // A later callback for the attempt does not erase the conflict.
    store.placements.settleOperation(LEASE_1, OP_1, "success", T0 + 1);
    assert.equal(store.placements.placement(LEASE_1)?.state, "conflict");
  });

  it("a confirmed owner contradicted by another backend becomes a conflict; unrecorded leases are reported", () => {
    using store = fresh();
    store.placements.recordAttempt(attempt(LEASE_1, "one", OP_1));
    store.placements.settleOperation(LEASE_1, OP_1, "success", T0);
    assert.deepEqual(store.placements.applyPositiveInventory("one", [LEASE_1, LEASE_2], T0), {
      confirmed: [LEASE_1],
      conflicts: [],
      unrecorded: [LEASE_2],
    });
    store.placements.applyPositiveInventory("two", [LEASE_1], T0);
    assert.deepEqual(store.placements.placement(LEASE_1), {
      leaseUuid: LEASE_1,
      state: "conflict",
      owner: undefined,
      lifecycleId: undefined,
      candidates: ["one", "two"],
      updatedAt: T0,
    });
  });

  it("an attempt made durable before a kill -9 is still there after reopening", async () => {
    fresh().close();
    // The child writes an attempt and awaits durable() (as the provisioner does before it
    // calls a backend), says so, then waits to be killed mid-"backend call".
    const script = `
      import { PlacementStore } from ${JSON.stringify(join(process.cwd(), "src/provider/store/index.ts"))};
      const s = PlacementStore.open(${JSON.stringify(files.path)}, ${JSON.stringify(PROVIDER)});
      s.placements.recordAttempt({ leaseUuid: ${JSON.stringify(LEASE_1)}, backend: "one", operationId: ${JSON.stringify(OP_1)},
        kind: "provision", createdAt: 1 });
      s.placements.durable().then(() => process.stdout.write("committed\\n"));
      setInterval(() => {}, 1000);
    `;
    const scriptPath = `${files.path}-child.ts`;
    writeFileSync(scriptPath, script);
    const child = await launchScript(scriptPath, [], {
      ready: (line, stream) => (stream === "stdout" && line.includes("committed") ? true : undefined),
    });
    await child.kill();
    using store = PlacementStore.open(files.path, PROVIDER);
    assert.equal(store.placements.attemptFor(LEASE_1)?.operationId, OP_1);
  });
});

describe("placements: restoring a lifecycle id", () => {
  it("gives an adopted placement its owner's lifecycle id, and the sweep's view sees it", () => {
    using store = fresh();
    store.placements.adoptPlacement(LEASE_1, "one", T0);
    const seen: unknown[] = [];
    store.placements.eachPlacement((row) => seen.push(row[5]));
    assert.deepEqual(seen, [1], "no lifecycle id yet");
    assert.equal(store.placements.restoreLifecycle(LEASE_1, "one", OP_1), true);
    assert.equal(store.placements.placement(LEASE_1)?.lifecycleId, OP_1);
    assert.equal(store.placements.placement(LEASE_1)?.owner, "one");
    seen.length = 0;
    store.placements.eachPlacement((row) => seen.push(row[5]));
    assert.deepEqual(seen, [0]);
  });

  it("bad input: another backend, an existing id, a conflict, a missing record or a bad id change nothing", () => {
    using store = fresh();
    store.placements.adoptPlacement(LEASE_1, "one", T0);
    assert.equal(store.placements.restoreLifecycle(LEASE_1, "two", OP_1), false, "not the owner");
    assert.equal(store.placements.restoreLifecycle(LEASE_1, "one", "not-a-uuid"), false, "not a UUIDv4");
    assert.equal(
      store.placements.restoreLifecycle(LEASE_1, "one", "3F2C1B4A-5D6E-4F70-8A9B-0C1D2E3F4A5B"),
      false,
      "not canonical",
    );
    assert.equal(store.placements.placement(LEASE_1)?.lifecycleId, undefined);
    assert.equal(store.placements.restoreLifecycle(LEASE_1, "one", OP_1), true);
    assert.equal(store.placements.restoreLifecycle(LEASE_1, "one", OP_2), false, "an id is never replaced");
    assert.equal(store.placements.placement(LEASE_1)?.lifecycleId, OP_1);
    store.placements.quarantine(LEASE_2, ["one", "two"], T0);
    assert.equal(store.placements.restoreLifecycle(LEASE_2, "one", OP_2), false, "a conflict");
    assert.equal(
      store.placements.restoreLifecycle("0190f3a2-7c1e-7000-8000-000000000009", "one", OP_2),
      false,
      "no record",
    );
  });
});

describe("placements: group commit (WalDurability)", () => {
  const lease = (i: number) => `0190f3a2-7c1e-7000-8000-${(0x1000 + i).toString(16).padStart(12, "0")}`;
  const readBeside = <T>(read: (store: PlacementStore) => T): T => {
    using reader = PlacementStore.open(files.path, PROVIDER, { readonly: true });
    return read(reader);
  };

  it("the attempts of one turn share one transaction and one fsync; each caller gets its own result", async () => {
    using store = fresh();
    const results = [
      store.placements.recordAttempt(attempt(LEASE_1, "one", OP_1)),
      store.placements.recordAttempt(attempt(LEASE_1, "two", OP_2)),
      store.placements.recordAttempt(attempt(LEASE_2, "two", OP_2)),
    ];
    assert.deepEqual(results, ["recorded", "lease-busy", "recorded"]);
    await Promise.all(results.map(() => store.placements.durable()));
    assert.deepEqual(store.database.stats, { transactions: 1, fsyncs: 1 });
    assert.equal(
      readBeside((r) => r.placements.counts().attempts),
      2,
    );
  });

  it("no caller hears durable before the fsync that covers its commit", async () => {
    using store = fresh();
    store.placements.recordAttempt(attempt(LEASE_1, "one", OP_1));
    const first = store.placements.durable().then(() => store.database.stats.fsyncs);
    assert.equal(
      readBeside((r) => r.placements.counts().attempts),
      0,
      "uncommitted while the turn runs",
    );
    assert.equal(await first, 1);
    // Written while that fsync may still be running: covered only by a later one.
    store.placements.recordAttempt(attempt(LEASE_2, "two", OP_2));
    assert.equal(await store.placements.durable().then(() => store.database.stats.fsyncs), 2);
    assert.equal(
      readBeside((r) => r.placements.counts().attempts),
      2,
    );
  });

  it("a write that throws undoes only itself: the turn's other writers still commit", async () => {
    using store = fresh();
    store.placements.recordAttempt(attempt(LEASE_1, "one", OP_1));
    assert.throws(
      () =>
        store.placements.batch(() => {
          store.placements.adoptPlacement(LEASE_2, "one", T0);
          throw new Error("the callback's apply failed");
        }),
      /apply failed/,
    );
    store.placements.recordAttempt(attempt(LEASE_2, "two", OP_2));
    await store.placements.durable();
    assert.equal(store.database.stats.transactions, 1, "one shared transaction");
    assert.deepEqual(
      readBeside((r) => [
        r.placements.unresolvedAttempts().map((a) => a.leaseUuid),
        r.placements.placements(),
      ]),
      [[LEASE_1, LEASE_2], []],
    );
  });

  it("an online backup taken while writes go on copies a consistent store", async () => {
    using store = fresh();
    for (let i = 0; i < 2_000; i++) store.placements.adoptPlacement(lease(i), "one", T0);
    await store.durable();
    const dest = `${files.path}-copy.db`;
    closeSync(openSync(dest, "wx", 0o600));
    // Writes made from setImmediate callbacks: each turn's transaction stays open into the
    // next loop iteration, where the backup's own steps run too.
    let written = 2_000;
    let writing = true;
    const write = () => {
      if (!writing) return;
      const next = lease(written++);
      store.placements.batch(() => store.placements.adoptPlacement(next, "two", T0));
      setImmediate(write);
    };
    setImmediate(write);
    try {
      await store.database.backup(dest);
    } finally {
      writing = false;
    }
    using copy = PlacementStore.openCopy(dest);
    assert.equal(copy.database.db.pragma("integrity_check", { simple: true }), "ok");
    assert.equal(copy.fleet.backends().length, 2);
    const copied = copy.placements.counts().placements;
    assert.ok(copied >= 2_000 && copied <= written, `${copied} placements copied`);
  });
});
