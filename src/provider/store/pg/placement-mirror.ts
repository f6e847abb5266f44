import type Database from "better-sqlite3";
import type pg from "pg";
import { FredError, isFredError } from "../../../core/errors.ts";
import { describePgError } from "../../../pg/open.ts";
import type { TransactionRunner } from "../../../pg/transaction.ts";
import type { CommitSink } from "../../../sqlite/index.ts";
import type { NewBackendPin } from "../backend-fleet.ts";
import { PLACEMENT_MIGRATIONS } from "../placement-schema.ts";
import { PlacementStore } from "../placement-store.ts";
import { openStore } from "../sqlite.ts";
import { columnNames, deletePgRows, type Row, readPgRows, type TableMap, upsertPgRows } from "./tables.ts";

/**
 * The placement store on PostgreSQL (issue #36), as a mirror: the leader works on an
 * in-memory SQLite copy of the placement tables (the same schema, the same code, the same
 * synchronous reads as the file), and PostgreSQL holds the durable copy.
 *
 * Every change to a mirrored row is noted by a trigger (table and key); group commit
 * (src/sqlite/wal-durability.ts) calls `persist()` where the file would fsync its WAL, and
 * one fenced transaction (the leader lease's, ha/leader-lease.ts) writes each noted row as
 * it is now, or deletes it if it is gone. So a burst's writes cost one PostgreSQL
 * transaction, `durable()` means committed in PostgreSQL (synchronous commit), and a
 * deposed leader commits nothing: its fenced transaction fails, the mirror refuses every
 * later write, and the instance must load a fresh mirror before it leads again. Shipments
 * run one at a time, in commit order, so PostgreSQL holds every state the mirror passed
 * through at a `persist()`. A shipment that fails for another reason (the database
 * restarted) keeps its keys noted: the next one sends them, at their newest values.
 *
 * Only the leader writes these tables, so the mirror never needs another writer's rows;
 * the checks (foreign keys, CHECK, UNIQUE) run in the mirror, and PostgreSQL keeps the
 * primary keys the upserts need.
 */

/** The placement file's tables (placement-schema.ts), every one mirrored. */
export const MIRRORED_TABLES: readonly TableMap[] = [
  {
    sqlite: "store_meta",
    pg: "placement_meta",
    key: ["key"],
    columns: { key: "text", value: "text" },
    // Which kind of store a SQLite file is: every file's own marker, written by its opener.
    fileOnly: "key = 'kind'",
  },
  {
    sqlite: "backends",
    pg: "placement_backends",
    key: ["name"],
    columns: {
      name: "text",
      storage_id: "text",
      pinned_at: "bigint",
      baseline_at: "bigint",
      baseline_provisions: "bigint",
      baseline_retentions: "bigint",
      lost_at: "bigint",
    },
  },
  {
    sqlite: "placements",
    pg: "placements",
    key: ["lease_uuid"],
    columns: {
      lease_uuid: "bytea",
      state: "text",
      owner: "text",
      candidates: "text",
      updated_at: "bigint",
      lifecycle_id: "bytea",
      retained_at: "bigint",
      retained_storage_id: "text",
      retention_misses: "bigint",
      restore_target: "bytea",
    },
  },
  {
    sqlite: "attempts",
    pg: "placement_attempts",
    key: ["lease_uuid"],
    columns: {
      lease_uuid: "bytea",
      operation_id: "bytea",
      backend: "text",
      kind: "text",
      created_at: "bigint",
    },
  },
  {
    sqlite: "maintenance",
    pg: "maintenance_commands",
    key: ["lease_uuid", "command_key"],
    columns: {
      lease_uuid: "text",
      command_key: "text",
      maintenance_id: "text",
      tenant: "text",
      kind: "text",
      payload: "bytea",
      payload_sha256: "text",
      admitted_at_us: "bigint",
      backend: "text",
      lifecycle_id: "text",
      phase: "text",
      outcome: "text",
      answer_status: "bigint",
      answer_error: "text",
      answer_reason: "text",
      content_bytes: "bigint",
      settled_at: "bigint",
    },
  },
];

/**
 * The mirrored tables in providerd's PostgreSQL schema (pg/migrations.ts): the SQLite
 * columns with PostgreSQL's types and the primary keys. Written out, as every released
 * migration is never edited; a test checks it against MIRRORED_TABLES.
 */
export const PLACEMENT_MIRROR_MIGRATION = `
CREATE TABLE placement_meta (key text, value text, PRIMARY KEY (key));
CREATE TABLE placement_backends (name text, storage_id text, pinned_at bigint, baseline_at bigint,
  baseline_provisions bigint, baseline_retentions bigint, lost_at bigint, PRIMARY KEY (name));
CREATE TABLE placements (lease_uuid bytea, state text, owner text, candidates text, updated_at bigint,
  lifecycle_id bytea, retained_at bigint, retained_storage_id text, retention_misses bigint,
  restore_target bytea, PRIMARY KEY (lease_uuid));
CREATE TABLE placement_attempts (lease_uuid bytea, operation_id bytea, backend text, kind text,
  created_at bigint, PRIMARY KEY (lease_uuid));
CREATE TABLE maintenance_commands (lease_uuid text, command_key text, maintenance_id text, tenant text,
  kind text, payload bytea, payload_sha256 text, admitted_at_us bigint, backend text, lifecycle_id text,
  phase text, outcome text, answer_status bigint, answer_error text, answer_reason text,
  content_bytes bigint, settled_at bigint, PRIMARY KEY (lease_uuid, command_key))`;

/** Where the mirror's durable copy lives: the pool, and the transaction every shipment runs in. */
export interface PlacementDatabase {
  pool: pg.Pool;
  /** The leader lease's fenced transaction (a plain one where no other instance can exist). */
  fence: TransactionRunner;
}

/** The rows of every mirrored table, as arrays in `columns` order, keyed by SQLite table. */
export type TableRows = Map<string, Row[]>;

/**
 * `fred placement init` on PostgreSQL: the mirrored tables must be empty. Pins each
 * backend and binds the provider, as `PlacementStore.create` does a file, and returns once
 * PostgreSQL holds it.
 */
export async function createPlacementsOnPostgres(
  target: PlacementDatabase,
  providerUuid: string,
  backends: readonly NewBackendPin[],
  now: number,
): Promise<PlacementStore> {
  PlacementStore.checkNew(providerUuid, backends);
  const rows = await readMirroredTables(target.pool);
  const held = [...rows.values()].reduce((n, r) => n + r.length, 0);
  if (held > 0) {
    throw new FredError(
      "ERR_STORE_EXISTS",
      `the placement store in PostgreSQL already holds ${held} rows; refusing to initialise over them`,
    );
  }
  const store = PlacementStore.initialise(openMirror(target, new Map()), providerUuid, backends, now);
  try {
    await store.durable();
  } catch (err) {
    store.close();
    throw err;
  }
  return store;
}

/**
 * Loads the placement store of `providerUuid` from PostgreSQL into a fresh mirror: at
 * start and whenever this instance becomes leader (a mirror that once failed to persist
 * is never reused).
 */
export async function openPlacementsOnPostgres(
  source: PlacementDatabase,
  providerUuid: string,
  opts: { restoredCopy?: "refuse" | "allow" } = {},
): Promise<PlacementStore> {
  const rows = await readMirroredTables(source.pool);
  if ((rows.get("store_meta") ?? []).length === 0) {
    throw new FredError(
      "ERR_STORE_MISSING",
      "the placement store in PostgreSQL is empty: initialise it (fred placement init) or move a provider's files into it (fred placement migrate)",
    );
  }
  return PlacementStore.bind(openMirror(source, rows), providerUuid, "placement store in PostgreSQL", opts);
}

/** An in-memory placement database holding `rows`, whose commits persist to `target`. */
function openMirror(target: PlacementDatabase, rows: TableRows) {
  return openStore(":memory:", "placement", PLACEMENT_MIGRATIONS, {
    create: "if-missing",
    durability: "group-commit",
    sink: (db) => {
      checkMirrorCoversSchema(db);
      loadRows(db, rows);
      return new PlacementMirror(db, target.fence);
    },
  });
}

/** Every table and column of the SQLite schema is mirrored: a new migration must extend MIRRORED_TABLES. */
function checkMirrorCoversSchema(db: Database.Database): void {
  const tables = db
    .prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .pluck()
    .all();
  const mirrored = new Map(MIRRORED_TABLES.map((t) => [t.sqlite, t]));
  for (const table of tables) {
    const t = mirrored.get(table);
    const columns = db
      .prepare<[], string>(`SELECT name FROM pragma_table_info('${table}') ORDER BY name`)
      .pluck()
      .all();
    const known = t === undefined ? [] : Object.keys(t.columns).sort();
    if (columns.join() !== known.join()) {
      throw new FredError(
        "ERR_STORE_KIND",
        `placement mirror: table ${table} has columns [${columns.join(", ")}], mirrored [${known.join(", ")}]`,
      );
    }
  }
}

/** Reads every mirrored table in one consistent snapshot. */
export async function readMirroredTables(pool: pg.Pool): Promise<TableRows> {
  const client = await connect(pool);
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const rows: TableRows = new Map();
    for (const t of MIRRORED_TABLES) rows.set(t.sqlite, await readPgRows(client, t));
    await client.query("COMMIT");
    return rows;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw unreachable("cannot read the placement store", err);
  } finally {
    client.release();
  }
}

async function connect(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (err) {
    throw unreachable("cannot connect to the placement store", err);
  }
}

function unreachable(what: string, err: unknown): FredError {
  if (isFredError(err)) return err;
  return new FredError("ERR_STORE_UNREACHABLE", `${what} in PostgreSQL: ${describePgError(err)}`, {
    cause: err,
  });
}

/** Copies loaded rows into the fresh in-memory schema (before the triggers exist: nothing to send back). */
export function loadRows(db: Database.Database, rows: TableRows): void {
  db.transaction(() => {
    for (const t of MIRRORED_TABLES) {
      const names = columnNames(t);
      const insert = db.prepare(
        `INSERT OR REPLACE INTO ${t.sqlite} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
      );
      for (const row of rows.get(t.sqlite) ?? []) insert.run(row);
    }
  })();
}

/** The changed keys of one shipment, and the rows as they are now (undefined: deleted). */
interface Shipment {
  keys: { tbl: string; k1: unknown; k2: unknown }[];
  upserts: Map<TableMap, Row[]>;
  deletes: Map<TableMap, Row[]>;
}

class PlacementMirror implements CommitSink {
  readonly #db: Database.Database;
  readonly #fence: TransactionRunner;
  #failure: Error | undefined;
  readonly #noted: Database.Statement<[], { tbl: string; k1: unknown; k2: unknown }>;
  readonly #forget: Database.Statement<[]>;
  readonly #note: Database.Statement<[string, unknown, unknown]>;
  /** Per table: the row of one key, in `columns` order. */
  readonly #rowOf: Map<string, { table: TableMap; read: Database.Statement<unknown[], Row> }>;

  constructor(db: Database.Database, fence: TransactionRunner) {
    this.#db = db;
    this.#fence = fence;
    // The noted keys live in the connection's temp schema: never part of the store's data.
    db.exec(
      "CREATE TEMP TABLE mirror_dirty (tbl TEXT NOT NULL, k1 ANY NOT NULL, k2 ANY NOT NULL, PRIMARY KEY (tbl, k1, k2))",
    );
    this.#rowOf = new Map();
    for (const t of MIRRORED_TABLES) {
      const [a, b] = t.key;
      const keyOf = (row: "NEW" | "OLD") =>
        `'${t.sqlite}', ${row}.${a}, ${b === undefined ? "''" : `${row}.${b}`}`;
      // NOT EXISTS rather than OR IGNORE: a trigger's conflict clause yields to the firing statement's.
      const note = (row: "NEW" | "OLD") =>
        `INSERT INTO mirror_dirty SELECT ${keyOf(row)} WHERE NOT EXISTS
           (SELECT 1 FROM mirror_dirty WHERE (tbl, k1, k2) = (${keyOf(row)}));`;
      db.exec(`
        CREATE TEMP TRIGGER mirror_${t.sqlite}_insert AFTER INSERT ON main.${t.sqlite} BEGIN ${note("NEW")} END;
        CREATE TEMP TRIGGER mirror_${t.sqlite}_update AFTER UPDATE ON main.${t.sqlite} BEGIN ${note("OLD")} ${note("NEW")} END;
        CREATE TEMP TRIGGER mirror_${t.sqlite}_delete AFTER DELETE ON main.${t.sqlite} BEGIN ${note("OLD")} END;
      `);
      const where = b === undefined ? `${a} = ?` : `${a} = ? AND ${b} = ?`;
      const read = db
        .prepare<unknown[], unknown[]>(
          `SELECT ${Object.keys(t.columns).join(", ")} FROM main.${t.sqlite} WHERE ${where}`,
        )
        .raw();
      this.#rowOf.set(t.sqlite, { table: t, read });
    }
    this.#noted = db.prepare("SELECT tbl, k1, k2 FROM mirror_dirty");
    this.#forget = db.prepare("DELETE FROM mirror_dirty");
    this.#note = db.prepare("INSERT OR IGNORE INTO mirror_dirty VALUES (?, ?, ?)");
  }

  get failure(): Error | undefined {
    return this.#failure;
  }

  persist(): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    // Taken now, synchronously: the commits made before this call, and only those.
    const shipment = this.#take();
    if (shipment.keys.length === 0) return Promise.resolve();
    return this.#fence((client) => ship(client, shipment)).then(
      () => undefined,
      (err: unknown) => {
        if (isFredError(err) && err.code === "ERR_NOT_LEADER") {
          // Deposed: this mirror may never write again. Writes through write() are refused
          // with this error; a bare statement is refused by SQLite itself.
          this.#failure = err;
          if (this.#db.open) this.#db.pragma("query_only = ON");
          throw err;
        }
        // Not sent: note the keys again, so the next shipment carries their newest rows.
        if (this.#db.open) for (const k of shipment.keys) this.#note.run(k.tbl, k.k1, k.k2);
        throw unreachable("cannot persist the placement store", err);
      },
    );
  }

  #take(): Shipment {
    const keys = this.#noted.all();
    this.#forget.run();
    const upserts = new Map<TableMap, Row[]>();
    const deletes = new Map<TableMap, Row[]>();
    for (const k of keys) {
      const { table, read } = this.#rowOf.get(k.tbl)!;
      const row = table.key.length === 1 ? read.get(k.k1) : read.get(k.k1, k.k2);
      if (row === undefined) push(deletes, table, table.key.length === 1 ? [k.k1] : [k.k1, k.k2]);
      else push(upserts, table, row);
    }
    return { keys, upserts, deletes };
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/**
 * Writes one shipment: deletes first (a key deleted and another inserted in the same
 * shipment never collide), then upserts, one statement per table.
 */
async function ship(client: pg.PoolClient, s: Shipment): Promise<void> {
  for (const [t, keys] of s.deletes) await deletePgRows(client, t, keys);
  for (const [t, rows] of s.upserts) await upsertPgRows(client, t, rows);
}
