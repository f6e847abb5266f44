/**
 * The node's SQLite database: committed module state, blocks, tx results and the tx
 * attribute index. One block = one SQLite transaction, so a crash (even kill -9) leaves
 * either the whole block or none of it.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { openDatabase } from "../../sqlite/index.ts";

const MIGRATIONS: string[] = [
  `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
   CREATE TABLE state (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
   CREATE TABLE blocks (
     height INTEGER PRIMARY KEY, hash TEXT NOT NULL, time_ms INTEGER NOT NULL, num_txs INTEGER NOT NULL,
     size INTEGER NOT NULL, block_id TEXT NOT NULL, block TEXT NOT NULL, results TEXT NOT NULL);
   CREATE TABLE txs (
     hash TEXT PRIMARY KEY, height INTEGER NOT NULL, idx INTEGER NOT NULL, tx BLOB NOT NULL,
     result TEXT NOT NULL) WITHOUT ROWID;
   CREATE INDEX txs_by_height ON txs (height, idx);
   CREATE TABLE tx_attrs (key TEXT NOT NULL, value TEXT NOT NULL, height INTEGER NOT NULL, idx INTEGER NOT NULL);
   CREATE INDEX tx_attrs_by_kv ON tx_attrs (key, value);
   CREATE INDEX tx_attrs_by_height ON tx_attrs (height);`,
  // One B-tree for the attribute index: "<type>.<key>=<value>" and the tx position
  // (height × 2^20 + index), no secondary indexes to maintain on every insert.
  `DROP TABLE tx_attrs;
   CREATE TABLE tx_kv (kv TEXT NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (kv, pos)) WITHOUT ROWID;`,
  // The block event index behind block_search ("<type>.<key>=<value>" → height), filled
  // for the blocks already stored from their FinalizeBlock events.
  `CREATE TABLE block_kv (kv TEXT NOT NULL, height INTEGER NOT NULL, PRIMARY KEY (kv, height)) WITHOUT ROWID;
   INSERT OR IGNORE INTO block_kv (kv, height)
     SELECT json_extract(e.value, '$.type') || '.' || json_extract(a.value, '$.key') || '=' ||
            json_extract(a.value, '$.value'), b.height
     FROM blocks b, json_each(b.results, '$.finalize_block_events') e, json_each(e.value, '$.attributes') a
     WHERE json_extract(e.value, '$.type') <> '' AND json_extract(a.value, '$.key') <> ''
       AND json_extract(a.value, '$.index') = 1;`,
];

/**
 * Opens (creating and migrating) the chain database. `normal` durability: WAL with
 * `synchronous = NORMAL` survives a process crash (kill -9); only an OS crash can lose
 * the tail, which a development chain can afford. Nothing is deferred, so closing the
 * returned handle directly is enough.
 */
export function openChainDb(path: string): Database.Database {
  mkdirSync(dirname(path), { recursive: true });
  return openDatabase({
    path,
    migrations: MIGRATIONS,
    durability: "normal",
    label: "devnet database",
    newerSchemaCode: "ERR_DEVNET_SCHEMA",
  }).db;
}

export class MetaTable {
  readonly #get: Database.Statement<[string], { value: string }>;
  readonly #set: Database.Statement<[string, string]>;

  constructor(db: Database.Database) {
    this.#get = db.prepare("SELECT value FROM meta WHERE key = ?");
    this.#set = db.prepare(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    );
  }

  get(key: string): string | undefined {
    return this.#get.get(key)?.value;
  }

  set(key: string, value: string): void {
    this.#set.run(key, value);
  }
}
