import { existsSync, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { type ErrorCode, FredError } from "../../../core/errors.ts";
import { isUuidV4, newUuidV4 } from "../../../core/uuid.ts";
import { openDatabase, type SqliteDatabase } from "../../../sqlite/index.ts";
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
  /** Under group commit: close it with `database.close()`, which makes the last commits durable. */
  database: SqliteDatabase;
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
  // The journal holds callback URLs (bearer capabilities): the opener creates it 0600.
  const database = openDatabase({
    path: opts.path,
    migrations: MIGRATIONS,
    durability: "group-commit",
    create: opts.mode === "verify" ? "never" : "if-missing",
    label: "journal",
    newerSchemaCode: "ERR_JOURNAL_TOO_NEW",
    ...(opts.mode === "verify"
      ? {
          refuseEmpty: () =>
            storageError("ERR_STORAGE_UNBOUND", "journal is not bound to a storage identity"),
        }
      : {}),
  });
  const db = database.db;
  try {
    const bound = (
      db.prepare("SELECT value FROM meta WHERE key = 'storage_id'").get() as { value: string } | undefined
    )?.value;
    if (opts.mode === "initialize") {
      if (bound !== undefined) {
        throw storageError("ERR_STORAGE_ALREADY_BOUND", `journal is already bound to storage id ${bound}`);
      }
      return { database, storageId: bind(database, opts.storageId ?? newUuidV4()) };
    }
    if (bound === undefined) {
      if (opts.mode === "bind-or-verify" && opts.storageId !== undefined && isEmpty(db)) {
        return { database, storageId: bind(database, opts.storageId) };
      }
      throw storageError("ERR_STORAGE_UNBOUND", "journal is not bound to a storage identity");
    }
    if (opts.storageId !== undefined && bound !== opts.storageId) {
      throw storageError(
        "ERR_STORAGE_MISMATCH",
        `journal is bound to storage id ${bound}, not the configured ${opts.storageId}`,
      );
    }
    return { database, storageId: bound };
  } catch (err) {
    database.close();
    throw err;
  }
}

function bind(database: SqliteDatabase, storageId: string): string {
  database.db.prepare("INSERT INTO meta (key, value) VALUES ('storage_id', ?)").run(storageId);
  database.committed();
  return storageId;
}

function isEmpty(db: Database.Database): boolean {
  const n = (t: string) => (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
  return n("leases") === 0 && n("tombstones") === 0 && n("outbox") === 0;
}
