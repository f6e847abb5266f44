import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, beforeEach, describe, it } from "node:test";
import Database from "better-sqlite3";
import { isFredError } from "../../../src/core/errors.ts";
import { type Attempt, PlacementStore } from "../../../src/provider/store/index.ts";
import { PLACEMENT_MIGRATIONS } from "../../../src/provider/store/placement-schema.ts";
import { openStore } from "../../../src/provider/store/sqlite.ts";
import { launchScript } from "../../support/index.ts";

const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
const OTHER_PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000bb";
const SID_1 = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const SID_2 = "7a2d3b5f-9c4e-4d6f-8a71-8b9cad0e1f30";
const LEASE_1 = "0190f3a2-7c1e-7000-8000-000000000001";
const LEASE_2 = "0190f3a2-7c1e-7000-8000-000000000002";
const OP_1 = "11111111-1111-4111-8111-111111111111";
const OP_2 = "22222222-2222-4222-8222-222222222222";
const T0 = 1_700_000_000_000;

const root = mkdtempSync(join(tmpdir(), "fred-placement-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
let path: string;
beforeEach(() => {
  path = join(root, `p${++n}.db`);
});

function fresh(): PlacementStore {
  return PlacementStore.create(
    path,
    PROVIDER,
    [
      { name: "one", storageId: SID_1, baseline: { provisions: 0, retentions: 0 } },
      { name: "two", storageId: SID_2, baseline: { provisions: 0, retentions: 0 } },
    ],
    T0,
  );
}

function attempt(lease: string, backend: string, op: string): Attempt {
  return { leaseUuid: lease, backend, operationId: op, kind: "provision", createdAt: T0 + 1 };
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isFredError(err), String(err));
    return err.code;
  }
  assert.fail("expected a FredError");
}

describe("placement store: creation and binding", () => {
  it("creates a 0600 file with pins and baselines; open binds to the provider", () => {
    fresh().close();
    assert.equal(statSync(path).mode & 0o777, 0o600);
    using store = PlacementStore.open(path, PROVIDER);
    assert.deepEqual(
      store.backends().map((b) => [b.name, b.storageId, b.baseline?.provisions]),
      [
        ["one", SID_1, 0],
        ["two", SID_2, 0],
      ],
    );
    assert.equal(store.baselineMatches(["one", "two"]), true);
    assert.equal(store.baselineMatches(["one"]), false);
    assert.equal(store.baselineMatches(["one", "two", "three"]), false);
  });

  it("never creates on open, never overwrites on create", () => {
    assert.equal(
      code(() => PlacementStore.open(path, PROVIDER)),
      "ERR_STORE_MISSING",
    );
    assert.equal(existsSync(path), false);
    fresh().close();
    assert.equal(code(fresh), "ERR_STORE_EXISTS");
  });

  it("refuses another provider's store", () => {
    fresh().close();
    assert.equal(
      code(() => PlacementStore.open(path, OTHER_PROVIDER)),
      "ERR_PLACEMENT_PROVIDER",
    );
  });

  it("upgrades a schema-1 store in place: its placements keep their owner, without a lifecycle id", () => {
    // Build the file as the first release wrote it (migration 1 only).
    const first = openStore(path, "placement", PLACEMENT_MIGRATIONS.slice(0, 1), {
      create: "must-not-exist",
      durability: "full",
    });
    const db = first.db;
    db.prepare("INSERT INTO store_meta (key, value) VALUES ('provider_uuid', ?)").run(PROVIDER);
    db.prepare(
      "INSERT INTO backends (name, storage_id, pinned_at, baseline_at, baseline_provisions, baseline_retentions) VALUES ('one', ?, 0, 0, 0, 0)",
    ).run(SID_1);
    db.prepare(
      "INSERT INTO placements (lease_uuid, state, owner, updated_at) VALUES (?, 'confirmed', 'one', 5)",
    ).run(Buffer.from(LEASE_1.replaceAll("-", ""), "hex"));
    assert.equal(db.pragma("user_version", { simple: true }), 1);
    db.close();

    using store = PlacementStore.open(path, PROVIDER);
    const p = store.placement(LEASE_1);
    assert.equal(p?.owner, "one");
    assert.equal(p?.lifecycleId, undefined);
    const raw = new Database(path, { readonly: true });
    assert.equal(raw.pragma("user_version", { simple: true }), PLACEMENT_MIGRATIONS.length);
    raw.close();
  });

  it("refuses a schema newer than the code", () => {
    fresh().close();
    const db = new Database(path);
    db.pragma("user_version = 99");
    db.close();
    assert.equal(
      code(() => PlacementStore.open(path, PROVIDER)),
      "ERR_STORE_SCHEMA_NEWER",
    );
  });

  it("refuses unsafe files: wrong mode, symlink, hard link, foreign database", () => {
    fresh().close();
    chmodSync(path, 0o644);
    assert.equal(
      code(() => PlacementStore.open(path, PROVIDER)),
      "ERR_STORE_UNSAFE",
    );
    chmodSync(path, 0o600);
    const link = join(root, `link${n}.db`);
    symlinkSync(path, link);
    assert.equal(
      code(() => PlacementStore.open(link, PROVIDER)),
      "ERR_STORE_UNSAFE",
    );
    const hard = join(root, `hard${n}.db`);
    linkSync(path, hard);
    assert.equal(
      code(() => PlacementStore.open(path, PROVIDER)),
      "ERR_STORE_UNSAFE",
    );
    rmSync(hard);
    const foreign = join(root, `foreign${n}.db`);
    const db = new Database(foreign);
    db.exec("CREATE TABLE x (a)");
    db.close();
    chmodSync(foreign, 0o600);
    assert.equal(
      code(() => PlacementStore.open(foreign, PROVIDER)),
      "ERR_STORE_KIND",
    );
  });

  it("a read-only open reads beside the writer, refuses writes and another provider", () => {
    using writer = fresh();
    writer.recordAttempt(attempt(LEASE_1, "one", OP_1));
    using reader = PlacementStore.open(path, PROVIDER, { readonly: true });
    assert.deepEqual(reader.unresolvedAttempts(), [attempt(LEASE_1, "one", OP_1)]);
    assert.deepEqual(reader.counts(), { placements: 0, conflicts: 0, attempts: 1 });
    assert.throws(() => reader.recordAttempt(attempt(LEASE_2, "two", OP_2)), /readonly/);
    assert.equal(
      code(() => PlacementStore.open(path, OTHER_PROVIDER, { readonly: true })),
      "ERR_PLACEMENT_PROVIDER",
    );
    writer.recordAttempt(attempt(LEASE_2, "two", OP_2));
    assert.equal(reader.counts().attempts, 2, "the reader sees the writer's later commits");
  });

  it("refuses a non-v4 storage ID at creation", () => {
    assert.equal(
      code(() =>
        PlacementStore.create(
          path,
          PROVIDER,
          [{ name: "x", storageId: LEASE_1, baseline: { provisions: 0, retentions: 0 } }],
          T0,
        ),
      ),
      "ERR_PLACEMENT_STORAGE_ID",
    );
  });
});

describe("placement store: attempts and settlement", () => {
  it("records a batch in one transaction; a second attempt for a busy lease is refused", () => {
    using store = fresh();
    assert.deepEqual(store.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_1, "two", OP_2)]), [
      "recorded",
      "lease-busy",
    ]);
    assert.deepEqual(store.unresolvedAttempts(), [attempt(LEASE_1, "one", OP_1)]);
  });

  it("reads only the attempts created by a cutoff (the overdue ones), oldest first", () => {
    using store = fresh();
    store.recordAttempts([
      { ...attempt(LEASE_2, "two", OP_2), createdAt: T0 + 5 },
      { ...attempt(LEASE_1, "one", OP_1), createdAt: T0 + 1 },
    ]);
    assert.deepEqual(store.attemptsCreatedBy(T0), []);
    assert.deepEqual(
      store.attemptsCreatedBy(T0 + 1).map((a) => a.leaseUuid),
      [LEASE_1],
    );
    assert.deepEqual(
      store.attemptsCreatedBy(T0 + 5).map((a) => a.leaseUuid),
      [LEASE_1, LEASE_2],
    );
  });

  it("a store call inside batch() joins its transaction: a throw rolls back the whole batch", () => {
    using store = fresh();
    store.recordAttempt(attempt(LEASE_1, "one", OP_1));
    assert.throws(() =>
      store.batch(() => {
        store.settleOperation(LEASE_1, OP_1, "success", T0 + 2);
        store.recordAttempt(attempt(LEASE_2, "three", OP_2)); // unpinned backend: throws
      }),
    );
    assert.equal(store.attemptFor(LEASE_1)?.operationId, OP_1, "the settlement was rolled back");
    assert.equal(store.placement(LEASE_1), undefined);
  });

  it("refuses attempts naming an unpinned backend or a non-v4 operation id", () => {
    using store = fresh();
    assert.equal(
      code(() => store.recordAttempt(attempt(LEASE_1, "three", OP_1))),
      "ERR_PLACEMENT_UNKNOWN_BACKEND",
    );
    assert.equal(
      code(() => store.recordAttempt(attempt(LEASE_1, "one", LEASE_2))),
      "ERR_PLACEMENT_ATTEMPT",
    );
    assert.equal(store.counts().attempts, 0);
  });

  it("success callback confirms the attempted backend; the same id again is unknown", () => {
    using store = fresh();
    store.recordAttempt(attempt(LEASE_1, "two", OP_1));
    // Another (stale) operation id for the same lease settles nothing.
    assert.deepEqual(store.settleOperation(LEASE_1, OP_2, "success", T0 + 4), { kind: "unknown-operation" });
    assert.equal(store.clearRefusedAttempt(LEASE_1, OP_2), undefined);
    assert.equal(store.attemptFor(LEASE_1)?.operationId, OP_1);
    assert.equal(store.hasAttempt(LEASE_1), true);
    assert.equal(store.hasAttempt(LEASE_2), false);
    assert.equal(store.hasAttempt(LEASE_1.toUpperCase()), false, "a malformed UUID names no attempt");
    const r = store.settleOperation(LEASE_1, OP_1, "success", T0 + 5);
    assert.equal(r.kind, "settled");
    assert.deepEqual(store.placement(LEASE_1), {
      leaseUuid: LEASE_1,
      state: "confirmed",
      owner: "two",
      lifecycleId: OP_1,
      candidates: [],
      updatedAt: T0 + 5,
    });
    assert.equal(store.attemptFor(LEASE_1), undefined);
    assert.equal(store.hasAttempt(LEASE_1), false, "settled: the attempt row is gone");
    assert.deepEqual(store.settleOperation(LEASE_1, OP_1, "success", T0 + 6), { kind: "unknown-operation" });
  });

  it("failed callback and definite refusal clear the attempt without an owner", () => {
    using store = fresh();
    store.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_2, "one", OP_2)]);
    store.settleOperation(LEASE_1, OP_1, "failed", T0);
    assert.equal(store.placement(LEASE_1), undefined);
    assert.equal(store.clearRefusedAttempt(LEASE_2, OP_2)?.leaseUuid, LEASE_2);
    assert.equal(store.clearRefusedAttempt(LEASE_2, OP_2), undefined);
    assert.equal(store.counts().attempts, 0);
  });

  it("retireAttempt removes a lease's attempt only for the attempted backend", () => {
    using store = fresh();
    store.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_2, "two", OP_2)]);
    // Wrong backend: nothing changes.
    assert.equal(store.retireAttempt(LEASE_1, "two"), false);
    assert.equal(store.retireAttempt(LEASE_1, "three"), false);
    assert.equal(store.attemptFor(LEASE_1)?.operationId, OP_1);
    // Right backend: the row goes, and only that lease's row; nothing is confirmed.
    assert.equal(store.retireAttempt(LEASE_1, "one"), true);
    assert.equal(store.attemptFor(LEASE_1), undefined);
    assert.equal(store.placement(LEASE_1), undefined);
    assert.equal(store.attemptFor(LEASE_2)?.operationId, OP_2);
    // None left (or a malformed lease UUID): false, nothing changes.
    assert.equal(store.retireAttempt(LEASE_1, "one"), false);
    assert.equal(store.retireAttempt(LEASE_1.toUpperCase(), "two"), false);
    assert.deepEqual(store.counts(), { placements: 0, conflicts: 0, attempts: 1 });
    // The removal is committed: a reopened store agrees.
    store.close();
    using again = PlacementStore.open(path, PROVIDER);
    assert.deepEqual(again.unresolvedAttempts(), [attempt(LEASE_2, "two", OP_2)]);
  });

  it("positive inventory confirms attempts at that backend; silence clears nothing", () => {
    using store = fresh();
    store.recordAttempts([attempt(LEASE_1, "one", OP_1), attempt(LEASE_2, "two", OP_2)]);
    const out = store.applyPositiveInventory("one", [LEASE_1], T0 + 9);
    assert.deepEqual(out, { confirmed: [LEASE_1], conflicts: [], unrecorded: [] });
    assert.equal(store.placement(LEASE_1)?.lifecycleId, OP_1, "the attempt's id becomes the lifecycle id");
    // Backend "two" reporting nothing is not evidence: LEASE_2's attempt stays.
    assert.deepEqual(store.applyPositiveInventory("two", [], T0 + 9), {
      confirmed: [],
      conflicts: [],
      unrecorded: [],
    });
    assert.equal(store.attemptFor(LEASE_2)?.operationId, OP_2);
  });

  it("a report from another backend than the attempted one is a durable conflict", () => {
    using store = fresh();
    store.recordAttempt(attempt(LEASE_1, "one", OP_1));
    const out = store.applyPositiveInventory("two", [LEASE_1], T0);
    assert.deepEqual(out.conflicts, [LEASE_1]);
    assert.deepEqual(store.placement(LEASE_1)?.candidates, ["one", "two"]);
    // A later callback for the attempt does not erase the conflict.
    store.settleOperation(LEASE_1, OP_1, "success", T0 + 1);
    assert.equal(store.placement(LEASE_1)?.state, "conflict");
  });

  it("a confirmed owner contradicted by another backend becomes a conflict; unrecorded leases are reported", () => {
    using store = fresh();
    store.recordAttempt(attempt(LEASE_1, "one", OP_1));
    store.settleOperation(LEASE_1, OP_1, "success", T0);
    assert.deepEqual(store.applyPositiveInventory("one", [LEASE_1, LEASE_2], T0), {
      confirmed: [LEASE_1],
      conflicts: [],
      unrecorded: [LEASE_2],
    });
    store.applyPositiveInventory("two", [LEASE_1], T0);
    assert.deepEqual(store.placement(LEASE_1), {
      leaseUuid: LEASE_1,
      state: "conflict",
      owner: undefined,
      lifecycleId: undefined,
      candidates: ["one", "two"],
      updatedAt: T0,
    });
  });

  it("records a new baseline per backend", () => {
    using store = fresh();
    store.recordBaseline("two", { provisions: 4, retentions: 1 }, T0 + 60_000);
    assert.deepEqual(store.backends()[1]!.baseline, { provisions: 4, retentions: 1, at: T0 + 60_000 });
    assert.equal(
      code(() => store.recordBaseline("nope", { provisions: 0, retentions: 0 }, T0)),
      "ERR_PLACEMENT_UNKNOWN_BACKEND",
    );
  });

  it("an attempt committed before a kill -9 is still there after reopening", async () => {
    fresh().close();
    // The child commits an attempt, says so, then waits to be killed mid-"backend call".
    const script = `
      import { PlacementStore } from ${JSON.stringify(join(process.cwd(), "src/provider/store/index.ts"))};
      const s = PlacementStore.open(${JSON.stringify(path)}, ${JSON.stringify(PROVIDER)});
      s.recordAttempt({ leaseUuid: ${JSON.stringify(LEASE_1)}, backend: "one", operationId: ${JSON.stringify(OP_1)},
        kind: "provision", createdAt: 1 });
      process.stdout.write("committed\\n");
      setInterval(() => {}, 1000);
    `;
    const scriptPath = join(root, `child${n}.ts`);
    writeFileSync(scriptPath, script);
    const child = await launchScript(scriptPath, [], {
      ready: (line, stream) => (stream === "stdout" && line.includes("committed") ? true : undefined),
    });
    await child.kill();
    using store = PlacementStore.open(path, PROVIDER);
    assert.equal(store.attemptFor(LEASE_1)?.operationId, OP_1);
  });
});

describe("placement store: restoring a lifecycle id", () => {
  it("gives an adopted placement its owner's lifecycle id, and the sweep's view sees it", () => {
    using store = fresh();
    store.adoptPlacement(LEASE_1, "one", T0);
    const seen: unknown[] = [];
    store.eachPlacement((row) => seen.push(row[5]));
    assert.deepEqual(seen, [1], "no lifecycle id yet");
    assert.equal(store.restoreLifecycle(LEASE_1, "one", OP_1), true);
    assert.equal(store.placement(LEASE_1)?.lifecycleId, OP_1);
    assert.equal(store.placement(LEASE_1)?.owner, "one");
    seen.length = 0;
    store.eachPlacement((row) => seen.push(row[5]));
    assert.deepEqual(seen, [0]);
  });

  it("bad input: another backend, an existing id, a conflict, a missing record or a bad id change nothing", () => {
    using store = fresh();
    store.adoptPlacement(LEASE_1, "one", T0);
    assert.equal(store.restoreLifecycle(LEASE_1, "two", OP_1), false, "not the owner");
    assert.equal(store.restoreLifecycle(LEASE_1, "one", "not-a-uuid"), false, "not a UUIDv4");
    assert.equal(
      store.restoreLifecycle(LEASE_1, "one", "3F2C1B4A-5D6E-4F70-8A9B-0C1D2E3F4A5B"),
      false,
      "not canonical",
    );
    assert.equal(store.placement(LEASE_1)?.lifecycleId, undefined);
    assert.equal(store.restoreLifecycle(LEASE_1, "one", OP_1), true);
    assert.equal(store.restoreLifecycle(LEASE_1, "one", OP_2), false, "an id is never replaced");
    assert.equal(store.placement(LEASE_1)?.lifecycleId, OP_1);
    store.quarantine(LEASE_2, ["one", "two"], T0);
    assert.equal(store.restoreLifecycle(LEASE_2, "one", OP_2), false, "a conflict");
    assert.equal(
      store.restoreLifecycle("0190f3a2-7c1e-7000-8000-000000000009", "one", OP_2),
      false,
      "no record",
    );
  });
});
