import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
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

  it("names both schema versions and the way back, and never writes the refused file", () => {
    const path = fresh();
    openDatabase({ path, migrations: V2, durability: "group-commit", label: "test store" }).close();
    const before = readFileSync(path);
    assert.throws(
      () => openDatabase({ path, migrations: V1, durability: "group-commit", label: "test store" }),
      (err: unknown) =>
        isFredError(err, "ERR_STORE_SCHEMA_NEWER") &&
        err.message ===
          `test store ${path}: database schema version 2 is newer than this fred knows (1); it was written ` +
            "by a newer release. Install that release again, or restore the snapshot taken before the " +
            "upgrade (docs/upgrading.md)",
    );
    assert.deepEqual(readFileSync(path), before);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith(`${basename(path)}-`)),
      [],
      "the refused open left no -wal or -shm file",
    );
  });

  it("refuses a newer schema whose version is still in the WAL (a crash before the checkpoint)", () => {
    const path = fresh();
    openDatabase({ path, migrations: V1, durability: "full" }).close();
    // A newer release migrated and was killed: the new user_version lives only in the WAL.
    const writer = new Database(path);
    writer.pragma("wal_autocheckpoint = 0");
    writer.exec("ALTER TABLE a ADD COLUMN y INTEGER; PRAGMA user_version = 2;");
    const walCopy = readFileSync(`${path}-wal`);
    const mainCopy = readFileSync(path);
    const crashed = fresh();
    writeFileSync(crashed, mainCopy, { mode: 0o600 });
    writeFileSync(`${crashed}-wal`, walCopy, { mode: 0o600 });
    writer.close();
    assert.equal(readFileSync(crashed).readInt32BE(60), 1, "the header still says 1");
    refuses(
      () => openDatabase({ path: crashed, migrations: V1, durability: "full" }),
      "ERR_STORE_SCHEMA_NEWER",
    );
    assert.equal(version(crashed), 2);
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

  it("names a missing folder instead of making it", () => {
    const path = join(fresh(), "absent-folder", "store.db");
    assert.throws(
      () => openDatabase({ path, migrations: V1, durability: "full" }),
      (err: unknown) =>
        isFredError(err, "ERR_STORE_OPEN") && /its folder .*absent-folder does not exist/.test(err.message),
    );
    assert.equal(existsSync(join(path, "..")), false);
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

describe("openDatabase write() under group commit", () => {
  const turnEnd = () => new Promise((resolve) => setImmediate(resolve));
  /** What another connection (another process, after a SIGKILL of the writer) would read. */
  const outside = (path: string) => {
    const raw = new Database(path, { readonly: true });
    try {
      return raw.prepare("SELECT x FROM a ORDER BY x").pluck().all();
    } finally {
      raw.close();
    }
  };

  it("the writes of one turn commit together when the turn ends; a throw undoes only its own write", async () => {
    const path = fresh();
    using d = openDatabase({ path, migrations: V1, durability: "group-commit" });
    const insert = d.db.prepare("INSERT INTO a (x) VALUES (?)");
    d.write(() => insert.run(1));
    assert.throws(() =>
      d.write(() => {
        insert.run(2);
        throw new Error("refused");
      }),
    );
    assert.equal(
      d.write(() => insert.run(3).changes),
      1,
    );
    assert.deepEqual(
      d.db.prepare("SELECT x FROM a ORDER BY x").pluck().all(),
      [1, 3],
      "the writer sees its turn",
    );
    assert.deepEqual(outside(path), [], "nothing is committed before the turn ends");
    await turnEnd();
    assert.deepEqual(outside(path), [1, 3]);
    d.write(() => insert.run(4));
    await d.durable();
    assert.deepEqual(outside(path), [1, 3, 4], "durable() commits the turn before its fsync");
  });

  it("close() commits an open turn", () => {
    const path = fresh();
    const d = openDatabase({ path, migrations: V1, durability: "group-commit" });
    d.write(() => d.db.prepare("INSERT INTO a (x) VALUES (5)").run());
    d.close();
    assert.deepEqual(outside(path), [5]);
  });

  it("a turn that fails to commit is rolled back whole, and the database refuses writes after it", async () => {
    const path = fresh();
    const schema = [
      "CREATE TABLE a (x INTEGER PRIMARY KEY) STRICT",
      "CREATE TABLE b (x INTEGER REFERENCES a(x) DEFERRABLE INITIALLY DEFERRED) STRICT",
    ];
    const d = openDatabase({ path, migrations: schema, durability: "group-commit" });
    d.write(() => d.db.prepare("INSERT INTO a (x) VALUES (1)").run());
    await d.durable();
    assert.equal(d.failure, undefined);
    // A deferred foreign key is checked at COMMIT only: the turn's commit fails.
    d.write(() => d.db.prepare("INSERT INTO a (x) VALUES (2)").run());
    d.write(() => d.db.prepare("INSERT INTO b (x) VALUES (99)").run());
    const waited = d.durable();
    await assert.rejects(waited, /commit failed/);
    assert.match(String((d.failure as Error | undefined)?.message), /commit failed.*FOREIGN KEY/);
    assert.throws(() => d.write(() => d.db.prepare("INSERT INTO a (x) VALUES (3)").run()), /commit failed/);
    await assert.rejects(d.durable(), /commit failed/);
    d.close();
    assert.deepEqual(outside(path), [1], "the failed turn left nothing behind");
  });

  it("without group commit each write() is its own transaction", () => {
    const path = fresh();
    using d = openDatabase({ path, migrations: V1, durability: "full" });
    d.write(() => d.db.prepare("INSERT INTO a (x) VALUES (6)").run());
    assert.deepEqual(outside(path), [6]);
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
