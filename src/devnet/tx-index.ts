/**
 * Committed txs by hash plus the attribute index behind tx_search. Queries pick the most
 * selective indexed condition for SQL and evaluate the whole query on each candidate.
 */
import type Database from "better-sqlite3";
import type { ExecTxResultJson } from "./blocks.ts";
import { eventMap } from "./blocks.ts";
import type { CommittedTx } from "./node.ts";
import { type Condition, matches } from "./rpc/query-lang.ts";

interface TxRow {
  hash: string;
  height: number;
  idx: number;
  tx: Buffer;
  result: string;
}

export class TxIndex {
  readonly #insertTx: Database.Statement;
  readonly #insertAttr: Database.Statement;
  readonly #byHash: Database.Statement<[string], TxRow>;
  readonly #byHeight: Database.Statement<[number], TxRow>;
  readonly #byAttr: Database.Statement<[string, string], TxRow>;
  readonly #all: Database.Statement<[], TxRow>;
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#insertTx = db.prepare(
      "INSERT OR REPLACE INTO txs (hash, height, idx, tx, result) VALUES (?, ?, ?, ?, ?)",
    );
    this.#insertAttr = db.prepare("INSERT INTO tx_attrs (key, value, height, idx) VALUES (?, ?, ?, ?)");
    this.#byHash = db.prepare("SELECT hash, height, idx, tx, result FROM txs WHERE hash = ?");
    this.#byHeight = db.prepare(
      "SELECT hash, height, idx, tx, result FROM txs WHERE height = ? ORDER BY idx",
    );
    this.#byAttr = db.prepare(
      `SELECT t.hash, t.height, t.idx, t.tx, t.result FROM txs t
       WHERE EXISTS (SELECT 1 FROM tx_attrs a WHERE a.key = ? AND a.value = ? AND a.height = t.height AND a.idx = t.idx)
       ORDER BY t.height, t.idx`,
    );
    this.#all = db.prepare("SELECT hash, height, idx, tx, result FROM txs ORDER BY height, idx");
  }

  /** Called inside the block's transaction. */
  add(txs: CommittedTx[]): void {
    for (const t of txs) {
      this.#insertTx.run(t.hash, t.height, t.index, t.tx, JSON.stringify(t.result));
      const seen = new Set<string>();
      for (const e of t.result.events) {
        for (const a of e.attributes) {
          if (!a.index || e.type === "" || a.key === "") continue;
          const k = `${e.type}.${a.key}\u0000${a.value}`;
          if (seen.has(k)) continue;
          seen.add(k);
          this.#insertAttr.run(`${e.type}.${a.key}`, a.value, t.height, t.index);
        }
      }
    }
  }

  prune(maxHeight: number): void {
    this.#db.prepare("DELETE FROM txs WHERE height <= ?").run(maxHeight);
    this.#db.prepare("DELETE FROM tx_attrs WHERE height <= ?").run(maxHeight);
  }

  byHash(hashHex: string): CommittedTx | undefined {
    const row = this.#byHash.get(hashHex.toUpperCase());
    return row ? toTx(row) : undefined;
  }

  /** Every committed tx matching the query, ordered by (height, index). */
  search(conditions: Condition[]): CommittedTx[] {
    const hash = conditions.find((c) => c.key === "tx.hash" && c.op === "=" && typeof c.value === "string");
    const height = conditions.find(
      (c) => c.key === "tx.height" && c.op === "=" && typeof c.value === "number",
    );
    const attr = conditions.find(
      (c) => c.op === "=" && !c.key.startsWith("tx.") && typeof c.value === "string",
    );
    let rows: TxRow[];
    if (hash)
      rows = [this.#byHash.get(String(hash.value).toUpperCase())].filter((r): r is TxRow => r !== undefined);
    else if (height) rows = this.#byHeight.all(height.value as number);
    else if (attr) rows = this.#byAttr.all(attr.key, String(attr.value));
    else rows = this.#all.all();
    const out: CommittedTx[] = [];
    for (const row of rows) {
      const tx = toTx(row);
      const events = eventMap(tx.result.events, { "tx.hash": [tx.hash], "tx.height": [String(tx.height)] });
      if (matches(conditions, events)) out.push(tx);
    }
    return out;
  }
}

function toTx(row: TxRow): CommittedTx {
  return {
    hash: row.hash,
    height: row.height,
    index: row.idx,
    tx: row.tx,
    result: JSON.parse(row.result) as ExecTxResultJson,
  };
}
