import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { type ErrorCode, FredError, isFredError } from "../../src/core/errors.ts";
import { openDatabase } from "../../src/sqlite/index.ts";

const dir = mkdtempSync(join(tmpdir(), "fred-sqlite-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `db-${++n}.sqlite`);

const V1 = ["CREATE TABLE a (x INTEGER) STRICT"];
const V2 = [...V1, "ALTER TABLE a ADD COLUMN y INTEGER"];

const refuses = (fn: () => unknown, code: ErrorCode) =>
  assert.throws(fn, (err: unknown) => isFredError(err, code), `expected ${code}`);

/** The schema version on disk, read around the opener under test. */
const version = (path: string) => {
  const raw = new Database(path, { readonly: true });
  try {
    return raw.pragma("user_version", { simple: true });
  } finally {
    raw.close();
  }
};

describe("openDatabase", () => {
  it("creates the file 0600 and runs only the migrations it has not run yet", () => {
    const path = fresh();
    openDatabase({ path, migrations: V1, durability: "full" }).close();
    assert.equal(statSync(path).mode & 0o777, 0o600);
    {
      using d = openDatabase({ path, migrations: V1, durability: "full" });
      d.db.prepare("INSERT INTO a (x) VALUES (1)").run();
    }
    using d = openDatabase({ path, migrations: V2, durability: "full" });
    assert.deepEqual(d.db.prepare("SELECT x, y FROM a").all(), [{ x: 1, y: null }]);
    assert.equal(d.db.pragma("user_version", { simple: true }), 2);
    assert.equal(d.db.pragma("journal_mode", { simple: true }), "wal");
  });

  it("refuses a schema newer than the code, with the caller's code, and leaves it untouched", () => {
    const path = fresh();
    openDatabase({ path, migrations: V2, durability: "full" }).close();
    refuses(() => openDatabase({ path, migrations: V1, durability: "full" }), "ERR_STORE_SCHEMA_NEWER");
    refuses(
      () =>
        openDatabase({ path, migrations: V1, durability: "normal", newerSchemaCode: "ERR_DEVNET_SCHEMA" }),
      "ERR_DEVNET_SCHEMA",
    );
    openDatabase({ path, migrations: V2, durability: "full" }).close();
  });

  it("applies the create policy", () => {
    const path = fresh();
    refuses(
      () => openDatabase({ path, migrations: V1, durability: "full", create: "never" }),
      "ERR_STORE_MISSING",
    );
    assert.equal(existsSync(path), false, "a refused open creates nothing");
    openDatabase({ path, migrations: V1, durability: "full", create: "must-not-exist" }).close();
    refuses(
      () => openDatabase({ path, migrations: V1, durability: "full", create: "must-not-exist" }),
      "ERR_STORE_EXISTS",
    );
  });

  it("marks a kind once and refuses another kind's file or a foreign database", () => {
    const path = fresh();
    openDatabase({ path, migrations: V1, durability: "full", kind: "one" }).close();
    refuses(() => openDatabase({ path, migrations: V1, durability: "full", kind: "two" }), "ERR_STORE_KIND");
    const foreign = fresh();
    openDatabase({ path: foreign, migrations: V1, durability: "full" }).close();
    refuses(
      () => openDatabase({ path: foreign, migrations: V1, durability: "full", kind: "one" }),
      "ERR_STORE_KIND",
    );
  });

  it("refuses a file without a schema when asked to, without migrating it", () => {
    const path = fresh();
    openDatabase({ path, migrations: [], durability: "full" }).close();
    const refuse = () => new FredError("ERR_STORAGE_UNBOUND", "empty");
    refuses(
      () => openDatabase({ path, migrations: V1, durability: "full", refuseEmpty: refuse }),
      "ERR_STORAGE_UNBOUND",
    );
    assert.equal(version(path), 0);
  });

  it("group commit: a commit is made durable by durable(), and close checkpoints the WAL", async () => {
    const path = fresh();
    const d = openDatabase({ path, migrations: V1, durability: "group-commit" });
    assert.equal(d.db.pragma("synchronous", { simple: true }), 0, "commits do not wait for the disk");
    d.db.prepare("INSERT INTO a (x) VALUES (7)").run();
    d.committed();
    await d.durable();
    d.close();
    d.close();
    assert.equal(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0, 0);
    using again = openDatabase({ path, migrations: V1, durability: "full", readonly: true });
    assert.deepEqual(again.db.prepare("SELECT x FROM a").all(), [{ x: 7 }]);
  });
});

describe("openDatabase readonly", () => {
  it("reads a live writer's commits, writes nothing and does not checkpoint on close", async () => {
    const path = fresh();
    using writer = openDatabase({ path, migrations: V1, durability: "group-commit" });
    writer.db.prepare("INSERT INTO a (x) VALUES (1)").run();
    writer.committed();
    await writer.durable();
    const walBefore = statSync(`${path}-wal`).size;
    assert.ok(walBefore > 0, "the commit sits in the WAL");
    {
      using reader = openDatabase({ path, migrations: V1, durability: "group-commit", readonly: true });
      assert.equal(reader.readonly, true);
      assert.deepEqual(reader.db.prepare("SELECT x FROM a").all(), [{ x: 1 }]);
      assert.throws(() => reader.db.prepare("INSERT INTO a (x) VALUES (2)").run(), /readonly/);
    }
    assert.equal(statSync(`${path}-wal`).size, walBefore, "the reader's close left the WAL alone");
    writer.db.prepare("INSERT INTO a (x) VALUES (3)").run();
    assert.equal(writer.db.prepare("SELECT count(*) FROM a").pluck().get(), 2);
  });

  it("never creates or migrates: a missing file and an older schema are refused", () => {
    const path = fresh();
    refuses(
      () => openDatabase({ path, migrations: V1, durability: "full", readonly: true }),
      "ERR_STORE_MISSING",
    );
    assert.equal(existsSync(path), false);
    openDatabase({ path, migrations: V1, durability: "full" }).close();
    refuses(
      () => openDatabase({ path, migrations: V2, durability: "full", readonly: true }),
      "ERR_STORE_SCHEMA_OLDER",
    );
    assert.equal(version(path), 1);
  });
});
