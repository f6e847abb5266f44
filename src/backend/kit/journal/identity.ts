import { closeSync, existsSync, openSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { type ErrorCode, FredError } from "../../../core/errors.ts";
import { isUuidV4, newUuidV4 } from "../../../core/uuid.ts";
import { MIGRATIONS } from "./migrations.ts";

/**
 * Opening a journal file and its storage identity. A deployment's journal is bound once
 * to a canonical UUIDv4 storage id; a normal start only verifies (it never creates or
 * rebinds), so a missing, replaced or foreign file stops the backend instead of silently
 * starting from empty books.
 */
export type OpenMode =
  /** Create a fresh journal and bind `storageId` (or a new id); refuse one already bound. */
  | "initialize"
  /** The journal must exist and be bound (to `storageId` when given). */
  | "verify"
  /** Bind a fresh journal to `storageId`, or verify an existing one (mock backend, in-memory journals). */
  | "bind-or-verify";

export interface OpenJournalOptions {
  /** File path, or ":memory:". */
  path: string;
  mode: OpenMode;
  storageId?: string;
}

export interface OpenedDatabase {
  db: Database.Database;
  storageId: string;
}

const storageError = (code: ErrorCode, message: string) => new FredError(code, message);

export function openJournalDatabase(opts: OpenJournalOptions): OpenedDatabase {
  if (opts.storageId !== undefined && !isUuidV4(opts.storageId)) {
    throw storageError("ERR_STORAGE_ID_INVALID", "storage id must be a canonical lowercase UUIDv4");
  }
  const memory = opts.path === ":memory:";
  const exists = !memory && existsSync(opts.path) && statSync(opts.path).size > 0;
  if (opts.mode === "verify" && !memory && !exists) {
    throw storageError("ERR_STORAGE_MISSING", `journal ${opts.path} does not exist; initialize it first`);
  }
  // The journal holds callback URLs (bearer capabilities): create it readable by us only.
  if (!memory && !existsSync(opts.path) && opts.mode !== "verify") closeSync(openSync(opts.path, "a", 0o600));
  const db = new Database(opts.path, { fileMustExist: opts.mode === "verify" && !memory });
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 5000");
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw storageError(
        "ERR_JOURNAL_TOO_NEW",
        `journal schema version ${version} is newer than this code supports (${MIGRATIONS.length})`,
      );
    }
    const fresh = version === 0;
    if (fresh && opts.mode === "verify") {
      throw storageError("ERR_STORAGE_UNBOUND", "journal is not bound to a storage identity");
    }
    migrate(db, version);
    const bound = (
      db.prepare("SELECT value FROM meta WHERE key = 'storage_id'").get() as { value: string } | undefined
    )?.value;
    if (opts.mode === "initialize") {
      if (bound !== undefined) {
        throw storageError("ERR_STORAGE_ALREADY_BOUND", `journal is already bound to storage id ${bound}`);
      }
      return { db, storageId: bind(db, opts.storageId ?? newUuidV4()) };
    }
    if (bound === undefined) {
      if (opts.mode === "bind-or-verify" && opts.storageId !== undefined && isEmpty(db)) {
        return { db, storageId: bind(db, opts.storageId) };
      }
      throw storageError("ERR_STORAGE_UNBOUND", "journal is not bound to a storage identity");
    }
    if (opts.storageId !== undefined && bound !== opts.storageId) {
      throw storageError(
        "ERR_STORAGE_MISMATCH",
        `journal is bound to storage id ${bound}, not the configured ${opts.storageId}`,
      );
    }
    return { db, storageId: bound };
  } catch (err) {
    db.close();
    throw err;
  }
}

function migrate(db: Database.Database, from: number): void {
  for (let v = from; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

function bind(db: Database.Database, storageId: string): string {
  db.prepare("INSERT INTO meta (key, value) VALUES ('storage_id', ?)").run(storageId);
  return storageId;
}

function isEmpty(db: Database.Database): boolean {
  const n = (t: string) => (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
  return n("leases") === 0 && n("tombstones") === 0 && n("outbox") === 0;
}
