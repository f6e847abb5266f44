import { closeSync, lstatSync, openSync } from "node:fs";
import Database from "better-sqlite3";
import { FredError } from "../../core/errors.ts";

/**
 * The SQLite discipline shared by providerd's three stores: WAL, `synchronous=FULL`
 * (a commit is on disk before we act on it), numbered append-only migrations tracked in
 * `user_version`, a kind marker so one store's file is never opened as another's, and
 * a refusal to touch a schema newer than this code.
 */
export type Db = Database.Database;

export interface StoreSpec {
  /** "placement" | "payload" | "token-tracker": written once, checked on every open. */
  kind: string;
  /** Migration N is `migrations[N-1]`; never edit or reorder, only append. */
  migrations: readonly string[];
}

export interface OpenOptions {
  /** Create the file (exclusively, mode 0600) when it does not exist. */
  create: "never" | "if-missing" | "must-not-exist";
}

function fileState(path: string): "missing" | "ok" {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw new FredError("ERR_STORE_OPEN", `cannot inspect ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (st.isSymbolicLink())
    throw new FredError("ERR_STORE_UNSAFE", `${path} is a symbolic link; refusing to open it`);
  if (!st.isFile()) throw new FredError("ERR_STORE_UNSAFE", `${path} is not a regular file`);
  if (st.nlink !== 1)
    throw new FredError("ERR_STORE_UNSAFE", `${path} has ${st.nlink} hard links; expected exactly one`);
  if ((st.mode & 0o077) !== 0) {
    throw new FredError(
      "ERR_STORE_UNSAFE",
      `${path} is readable or writable by others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`,
    );
  }
  return "ok";
}

export function openStore(path: string, spec: StoreSpec, opts: OpenOptions): Db {
  const state = fileState(path);
  if (state === "missing" && opts.create === "never") {
    throw new FredError("ERR_STORE_MISSING", `${spec.kind} store ${path} does not exist`);
  }
  if (state === "ok" && opts.create === "must-not-exist") {
    throw new FredError(
      "ERR_STORE_EXISTS",
      `${spec.kind} store ${path} already exists; refusing to overwrite it`,
    );
  }
  if (state === "missing") {
    try {
      closeSync(openSync(path, "wx", 0o600));
    } catch (err) {
      throw new FredError("ERR_STORE_OPEN", `cannot create ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  let db: Db;
  try {
    db = new Database(path, { fileMustExist: true });
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 5000");
    // Keep hot B-tree pages in memory (64 MiB) and checkpoint in larger, rarer steps:
    // both cut the per-commit cost of the write-ahead attempt path.
    db.pragma("cache_size = -65536");
    db.pragma("wal_autocheckpoint = 8192");
  } catch (err) {
    throw new FredError(
      "ERR_STORE_OPEN",
      `cannot open ${spec.kind} store ${path}: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  try {
    migrate(db, spec, path);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

function migrate(db: Db, spec: StoreSpec, path: string): void {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version > spec.migrations.length) {
    throw new FredError(
      "ERR_STORE_SCHEMA_NEWER",
      `${path} has schema version ${version}, newer than this fred (${spec.migrations.length}); upgrade fred`,
    );
  }
  if (version > 0) {
    const kind = db.prepare("SELECT value FROM store_meta WHERE key = 'kind'").pluck().get();
    if (kind !== spec.kind) {
      throw new FredError("ERR_STORE_KIND", `${path} is a ${String(kind)} store, not a ${spec.kind} store`);
    }
  } else {
    const tables = db
      .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
      .pluck()
      .get() as number;
    if (tables > 0) throw new FredError("ERR_STORE_KIND", `${path} is not a fred ${spec.kind} store`);
  }
  const apply = db.transaction(() => {
    if (version === 0) {
      db.exec("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT");
      db.prepare("INSERT INTO store_meta (key, value) VALUES ('kind', ?)").run(spec.kind);
    }
    for (let n = version; n < spec.migrations.length; n++) db.exec(spec.migrations[n]!);
    db.pragma(`user_version = ${spec.migrations.length}`);
  });
  if (version < spec.migrations.length) apply();
}

export function readMeta(db: Db, key: string): string | undefined {
  return db.prepare("SELECT value FROM store_meta WHERE key = ?").pluck().get(key) as string | undefined;
}

export function writeMeta(db: Db, key: string, value: string): void {
  db.prepare(
    "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
  ).run(key, value);
}
