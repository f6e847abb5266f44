import assert from "node:assert/strict";
import { chmodSync, existsSync, linkSync, rmSync, statSync, symlinkSync } from "node:fs";
import { describe, it } from "node:test";
import Database from "better-sqlite3";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { PLACEMENT_MIGRATIONS } from "../../../src/provider/store/placement-schema.ts";
import { openStore } from "../../../src/provider/store/sqlite.ts";
import {
  attempt,
  code,
  createStore,
  databasePerTest,
  LEASE_1,
  LEASE_2,
  OP_1,
  OP_2,
  OTHER_PROVIDER,
  PROVIDER,
  SID_1,
  SID_2,
  T0,
} from "./fixture.ts";

const files = databasePerTest("fred-placement-");
const fresh = () => createStore(files.path);

describe("placement store: creation and binding", () => {
  it("creates a 0600 file with pins and baselines; open binds to the provider", () => {
    fresh().close();
    assert.equal(statSync(files.path).mode & 0o777, 0o600);
    using store = PlacementStore.open(files.path, PROVIDER);
    assert.deepEqual(
      store.fleet.backends().map((b) => [b.name, b.storageId, b.baseline?.provisions]),
      [
        ["one", SID_1, 0],
        ["two", SID_2, 0],
      ],
    );
    assert.equal(store.fleet.baselineMatches(["one", "two"]), true);
    assert.equal(store.fleet.baselineMatches(["one"]), false);
    assert.equal(store.fleet.baselineMatches(["one", "two", "three"]), false);
  });

  it("never creates on open, never overwrites on create", () => {
    assert.equal(
      code(() => PlacementStore.open(files.path, PROVIDER)),
      "ERR_STORE_MISSING",
    );
    assert.equal(existsSync(files.path), false);
    fresh().close();
    assert.equal(code(fresh), "ERR_STORE_EXISTS");
  });

  it("refuses another provider's store", () => {
    fresh().close();
    assert.equal(
      code(() => PlacementStore.open(files.path, OTHER_PROVIDER)),
      "ERR_PLACEMENT_PROVIDER",
    );
  });

  it("upgrades a schema-1 store in place: its placements keep their owner, without a lifecycle id", () => {
    // Build the file as the first release wrote it (migration 1 only).
    const first = openStore(files.path, "placement", PLACEMENT_MIGRATIONS.slice(0, 1), {
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

    using store = PlacementStore.open(files.path, PROVIDER);
    const p = store.placements.placement(LEASE_1);
    assert.equal(p?.owner, "one");
    assert.equal(p?.lifecycleId, undefined);
    const raw = new Database(files.path, { readonly: true });
    assert.equal(raw.pragma("user_version", { simple: true }), PLACEMENT_MIGRATIONS.length);
    raw.close();
  });

  it("refuses a schema newer than the code", () => {
    fresh().close();
    const db = new Database(files.path);
    db.pragma("user_version = 99");
    db.close();
    assert.equal(
      code(() => PlacementStore.open(files.path, PROVIDER)),
      "ERR_STORE_SCHEMA_NEWER",
    );
  });

  it("refuses unsafe files: wrong mode, symlink, hard link, foreign database", () => {
    fresh().close();
    chmodSync(files.path, 0o644);
    assert.equal(
      code(() => PlacementStore.open(files.path, PROVIDER)),
      "ERR_STORE_UNSAFE",
    );
    chmodSync(files.path, 0o600);
    const link = `${files.path}-link.db`;
    symlinkSync(files.path, link);
    assert.equal(
      code(() => PlacementStore.open(link, PROVIDER)),
      "ERR_STORE_UNSAFE",
    );
    const hard = `${files.path}-hard.db`;
    linkSync(files.path, hard);
    assert.equal(
      code(() => PlacementStore.open(files.path, PROVIDER)),
      "ERR_STORE_UNSAFE",
    );
    rmSync(hard);
    const foreign = `${files.path}-foreign.db`;
    const db = new Database(foreign);
    db.exec("CREATE TABLE x (a)");
    db.close();
    chmodSync(foreign, 0o600);
    assert.equal(
      code(() => PlacementStore.open(foreign, PROVIDER)),
      "ERR_STORE_KIND",
    );
  });

  it("a read-only open reads beside the writer, refuses writes and another provider", async () => {
    using writer = fresh();
    writer.placements.recordAttempt(attempt(LEASE_1, "one", OP_1));
    // The writer's turn commits its writes together (group commit); durable() commits it now.
    await writer.durable();
    using reader = PlacementStore.open(files.path, PROVIDER, { readonly: true });
    assert.deepEqual(reader.placements.unresolvedAttempts(), [attempt(LEASE_1, "one", OP_1)]);
    assert.deepEqual(reader.placements.counts(), { placements: 0, conflicts: 0, attempts: 1 });
    assert.throws(() => reader.placements.recordAttempt(attempt(LEASE_2, "two", OP_2)), /readonly/);
    assert.equal(
      code(() => PlacementStore.open(files.path, OTHER_PROVIDER, { readonly: true })),
      "ERR_PLACEMENT_PROVIDER",
    );
    writer.placements.recordAttempt(attempt(LEASE_2, "two", OP_2));
    assert.equal(reader.placements.counts().attempts, 1, "not before the writer's turn commits");
    await writer.durable();
    assert.equal(reader.placements.counts().attempts, 2, "the reader sees the writer's later commits");
  });

  it("refuses a non-v4 storage ID at creation", () => {
    assert.equal(
      code(() =>
        PlacementStore.create(
          files.path,
          PROVIDER,
          [{ name: "x", storageId: LEASE_1, baseline: { provisions: 0, retentions: 0 } }],
          T0,
        ),
      ),
      "ERR_PLACEMENT_STORAGE_ID",
    );
  });
});
