import { closeSync, lstatSync, openSync, readSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { ErrorCode } from "../core/error-codes.ts";
import { FredError } from "../core/errors.ts";
import { type Atomic, type CommitSink, WalDurability } from "./wal-durability.ts";

/**
 * The one way this codebase opens a SQLite file. WAL always; numbered append-only
 * migrations tracked in `user_version` (migration N is `migrations[N-1]`, each in its own
 * transaction); a database whose schema is newer than the code is refused, never touched.
 *
 * Durability says what a commit costs and promises:
 * - `group-commit`: commits do not wait for the disk; `durable()` resolves once one
 *   fsync covers every commit counted so far (see WalDurability). For stores whose
 *   effects leave the process (providerd's placement store, the backend journal), and the
 *   mock substrate's state, for its commits shared per turn.
 * - `full`: every commit is fsynced before it returns (`synchronous = FULL`).
 * - `normal`: survives a process crash, not an OS crash (`synchronous = NORMAL`): the
 *   devnet chain, a development tool.
 *
 * `readonly` opens an existing file without writing anything (no migration, no
 * checkpoint), so tools and tests can read a live daemon's file beside its writer.
 */
export type Durability = "group-commit" | "full" | "normal";

export interface OpenDatabaseOptions {
  /** File path, or ":memory:". */
  path: string;
  migrations: readonly string[];
  durability: Durability;
  readonly?: boolean;
  /** What to do when the file is missing or present; default "if-missing". Created files are mode 0600. */
  create?: "never" | "if-missing" | "must-not-exist";
  /** Refuse a symlink, a non-regular file, extra hard links, or any group/other access. */
  privateFile?: boolean;
  /**
   * A kind marker written once into `store_meta` and checked on every open, so one
   * store's file is never opened as another's (and a foreign SQLite file is refused).
   */
  kind?: string;
  /** Names the database in messages, e.g. "placement store"; default "database". */
  label?: string;
  /** The code a too-new schema raises; default ERR_STORE_SCHEMA_NEWER. */
  newerSchemaCode?: ErrorCode;
  /** When set, a file without a schema yet (user_version 0) is refused with this error, not migrated. */
  refuseEmpty?: () => FredError;
  /**
   * Group commit into a sink instead of the WAL (a ":memory:" database copied elsewhere):
   * called once, after the migrations, with the connection.
   */
  sink?: (db: Database.Database) => CommitSink;
}

export interface SqliteDatabase {
  /** The better-sqlite3 handle: prepare statements once against it. */
  readonly db: Database.Database;
  readonly path: string;
  readonly readonly: boolean;
  /** Counts one committed write transaction toward the next `durable()` (group commit only). */
  committed(): void;
  /**
   * Runs `fn` as one atomic write and counts it toward the next `durable()`. Under group
   * commit the writes of one event-loop turn share a transaction that commits when the
   * turn ends (see WalDurability); otherwise `fn` is its own transaction. Nested calls join.
   */
  write<T>(fn: () => T): T;
  /** `write()` for an `fn` that runs exactly one statement (atomic alone: no savepoint around it). */
  writeStatement<T>(fn: () => T): T;
  /** Set once a group-committed turn failed to commit: the database then refuses writes until reopened. */
  readonly failure: Error | undefined;
  /** Resolves once every counted commit is on stable storage. */
  durable(): Promise<void>;
  /** Whether every counted commit is on stable storage now (`durable()` would not wait). */
  readonly allDurable: boolean;
  /** Shared transactions committed and WAL fsyncs done (group commit; zeros otherwise). */
  readonly stats: { transactions: number; fsyncs: number };
  /**
   * Copies the database into `dest` (an existing empty file) with SQLite's online backup
   * API, never stepping over a transaction left open (see WalDurability.duringBackup).
   */
  backup(dest: string): Promise<void>;
  /** Makes everything durable (checkpoint under group commit) and closes; idempotent. */
  close(): void;
  [Symbol.dispose](): void;
}

export function openDatabase(o: OpenDatabaseOptions): SqliteDatabase {
  const label = o.label ?? "database";
  const memory = o.path === ":memory:";
  const readonly = o.readonly ?? false;
  if (!memory) {
    prepareFile(o, label, readonly);
    // Before SQLite sees the file: a read-write open of a newer release's database could
    // checkpoint its WAL into it, and a refused file must be left exactly as it was.
    const onDisk = headerSchemaVersion(o.path);
    if (onDisk !== undefined) refuseNewer(o, label, onDisk);
  }
  let db: Database.Database;
  try {
    db = new Database(o.path, { readonly, fileMustExist: !memory });
    db.pragma("busy_timeout = 5000");
    if (!readonly) {
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${o.durability === "normal" ? "NORMAL" : "FULL"}`);
      db.pragma("foreign_keys = ON");
      // Keep hot B-tree pages in memory (64 MiB at most) and checkpoint in larger, rarer
      // steps: both cut the per-commit cost of the write paths.
      db.pragma("cache_size = -65536");
      db.pragma("wal_autocheckpoint = 8192");
    }
  } catch (err) {
    throw new FredError("ERR_STORE_OPEN", `cannot open ${label} ${o.path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    migrate(db, o, label, readonly);
  } catch (err) {
    db.close();
    throw err;
  }
  // One transaction wrapper per database (better-sqlite3 wrappers are not free to create).
  const atomic: Atomic = db.transaction((work: () => unknown) => work());
  let wal: WalDurability | undefined;
  try {
    if (!readonly && o.durability === "group-commit") {
      wal = new WalDurability(db, o.path, atomic, o.sink?.(db));
    }
  } catch (err) {
    db.close();
    throw err;
  }
  const database: SqliteDatabase = {
    db,
    path: o.path,
    readonly,
    committed: () => wal?.committed(),
    write: <T>(fn: () => T): T => (wal === undefined ? (atomic(fn) as T) : wal.write(fn)),
    writeStatement: <T>(fn: () => T): T => (wal === undefined ? fn() : wal.writeStatement(fn)),
    get failure() {
      return wal?.failure;
    },
    durable: () => wal?.durable() ?? Promise.resolve(),
    get allDurable() {
      return wal?.allDurable ?? true;
    },
    get stats() {
      return wal?.stats ?? { transactions: 0, fsyncs: 0 };
    },
    backup: async (dest: string) => {
      const copy = async () => {
        await db.backup(dest);
      };
      await (wal === undefined ? copy() : wal.duringBackup(copy));
    },
    close: () => {
      if (!db.open) return;
      wal?.close();
      db.close();
    },
    [Symbol.dispose]: () => database.close(),
  };
  return database;
}

/** Applies the create policy and the private-file rule before SQLite sees the path. */
function prepareFile(o: OpenDatabaseOptions, label: string, readonly: boolean): void {
  const create = readonly ? "never" : (o.create ?? "if-missing");
  const present = fileState(o.path, o.privateFile ?? false);
  if (!present && create === "never") {
    throw new FredError("ERR_STORE_MISSING", `${label} ${o.path} does not exist`);
  }
  if (present && create === "must-not-exist") {
    throw new FredError("ERR_STORE_EXISTS", `${label} ${o.path} already exists; refusing to overwrite it`);
  }
  if (!present) {
    try {
      closeSync(openSync(o.path, "wx", 0o600));
    } catch (err) {
      // A missing folder is the usual first-start mistake; it is named, never made here (a
      // typo in a path must not start an empty store somewhere unexpected).
      const why =
        (err as NodeJS.ErrnoException).code === "ENOENT"
          ? `its folder ${dirname(o.path)} does not exist (create it, owned by the user the service runs as)`
          : (err as Error).message;
      throw new FredError("ERR_STORE_OPEN", `cannot create ${o.path}: ${why}`, { cause: err });
    }
  }
}

function fileState(path: string, privateFile: boolean): boolean {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw new FredError("ERR_STORE_OPEN", `cannot inspect ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (!privateFile) return true;
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
  return true;
}

function migrate(db: Database.Database, o: OpenDatabaseOptions, label: string, readonly: boolean): void {
  const target = o.migrations.length;
  const version = db.pragma("user_version", { simple: true }) as number;
  // Checked again here: the header peek cannot see a version still in the WAL.
  refuseNewer(o, label, version);
  if (version === 0 && o.refuseEmpty !== undefined) throw o.refuseEmpty();
  if (o.kind !== undefined) checkKind(db, o.kind, version, label, o.path);
  if (version === target) return;
  if (readonly) {
    throw new FredError(
      "ERR_STORE_SCHEMA_OLDER",
      `${label} ${o.path} has schema version ${version}, older than this fred (${target}); ` +
        "open it read-write once (start the daemon) to migrate it",
    );
  }
  for (let v = version; v < target; v++) {
    db.transaction(() => {
      if (v === 0 && o.kind !== undefined) {
        db.exec("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT");
        db.prepare("INSERT INTO store_meta (key, value) VALUES ('kind', ?)").run(o.kind);
      }
      db.exec(o.migrations[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

function checkKind(db: Database.Database, kind: string, version: number, label: string, path: string): void {
  if (version > 0) {
    const hasMeta = db
      .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'")
      .pluck()
      .get();
    const found =
      hasMeta === 1 ? db.prepare("SELECT value FROM store_meta WHERE key = 'kind'").pluck().get() : undefined;
    if (found !== kind) {
      throw new FredError(
        "ERR_STORE_KIND",
        found === undefined
          ? `${path} is not a fred ${label}`
          : `${path} is a ${String(found)} store, not a ${kind} store`,
      );
    }
    return;
  }
  const tables = db
    .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
    .pluck()
    .get() as number;
  if (tables > 0) throw new FredError("ERR_STORE_KIND", `${path} is not a fred ${label}`);
}

/**
 * A schema newer than this code was written by a newer release: its tables may mean
 * things this code does not know, so the file is refused, never migrated "down".
 */
function refuseNewer(o: OpenDatabaseOptions, label: string, version: number): void {
  const known = o.migrations.length;
  if (version <= known) return;
  throw new FredError(
    o.newerSchemaCode ?? "ERR_STORE_SCHEMA_NEWER",
    `${label} ${o.path}: database schema version ${version} is newer than this fred knows (${known}); ` +
      "it was written by a newer release. Install that release again, or restore the snapshot " +
      "taken before the upgrade (docs/upgrading.md)",
  );
}

const HEADER_BYTES = 100;
const MAGIC = "SQLite format 3\0";

/**
 * `user_version` read from the file header (big-endian at offset 60) without SQLite, or
 * undefined when the header cannot be trusted to hold it: a file too short or not SQLite
 * (SQLite reports those), or a non-empty WAL beside it, whose newer page 1 only SQLite reads.
 */
function headerSchemaVersion(path: string): number | undefined {
  try {
    if (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size) return undefined;
    const header = Buffer.alloc(HEADER_BYTES);
    const fd = openSync(path, "r");
    let read: number;
    try {
      read = readSync(fd, header, 0, HEADER_BYTES, 0);
    } finally {
      closeSync(fd);
    }
    if (read < HEADER_BYTES || header.toString("latin1", 0, MAGIC.length) !== MAGIC) return undefined;
    return header.readInt32BE(60);
  } catch {
    // Unreadable here: SQLite's own open reports the reason.
    return undefined;
  }
}

/**
 * Remembered answers of one per-key read, for the reads `GET status` makes on every poll
 * (a tenant polls far more often than its lease changes): whether a row exists, or the one
 * field the poll needs.
 * In step with the table by construction: every statement that writes the table calls
 * `changed()` (which forgets everything), answers are remembered only outside a
 * transaction (so a rolled-back write leaves nothing behind), and never on a read-only
 * connection (its writer is another process, whose writes this one cannot see coming).
 * Another connection writing the same file (a tool, a test, a second process) is caught
 * by SQLite's `data_version`, which changes whenever another connection commits: the memo
 * is dropped then, so nothing depends on this connection being the only writer. That check
 * is a statement of its own, so it runs once per event-loop turn, not once per read: a
 * commit by another connection is seen from the next turn on. Nothing here can order this
 * process's reads against another process's commits more finely anyway: no lock is held
 * between a read and what the caller does with it.
 */
export class ReadMemo<T> {
  readonly #db: Database.Database;
  readonly #max: number;
  readonly #known = new Map<string, T>();
  readonly #dataVersion: Database.Statement<[], number>;
  #seenVersion: number | undefined;
  #checkedThisTurn = false;
  readonly #nextTurn = () => {
    this.#checkedThisTurn = false;
  };

  constructor(db: Database.Database, max = 10_000) {
    this.#db = db;
    this.#max = max;
    this.#dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
  }

  /** `read()`'s answer for `key`, from memory while no write happened since it was read. */
  get(key: string, read: (key: string) => T): T {
    if (!this.#checkedThisTurn) {
      const version = this.#dataVersion.get();
      if (version !== this.#seenVersion) {
        this.#known.clear(); // another connection committed: any answer may be stale
        this.#seenVersion = version;
      }
      this.#checkedThisTurn = true;
      setImmediate(this.#nextTurn).unref();
    }
    if (this.#known.has(key)) return this.#known.get(key) as T;
    const found = read(key);
    if (!this.#db.inTransaction && !this.#db.readonly) {
      // Bounded: a full memo starts over rather than growing with every key ever asked.
      if (this.#known.size >= this.#max) this.#known.clear();
      this.#known.set(key, found);
    }
    return found;
  }

  /** The table was written (or is about to be): nothing remembered holds any more. */
  changed(): void {
    this.#known.clear();
  }

  /** `statement` (one that writes the table) with `changed()` called before each run. */
  writes<P extends unknown[]>(statement: Database.Statement<P>): { run(...params: P): Database.RunResult } {
    return {
      run: (...params: P): Database.RunResult => {
        this.changed();
        return statement.run(...params);
      },
    };
  }
}
