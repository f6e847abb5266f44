/**
 * Committed txs by hash plus the attribute index behind tx_search. Queries pick the most
 * selective indexed condition for SQL and evaluate the whole query on each candidate.
 */
import type Database from "better-sqlite3";
import type { CommittedTx, ExecTxResultJson } from "./blocks.ts";
import { eventMap } from "./blocks.ts";
import { type Condition, matches } from "./query-lang.ts";

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
  readonly #byAttr: Database.Statement<[string], TxRow>;
  readonly #all: Database.Statement<[], TxRow>;
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#insertTx = db.prepare(
      "INSERT OR REPLACE INTO txs (hash, height, idx, tx, result) VALUES (?, ?, ?, ?, ?)",
    );
    this.#insertAttr = db.prepare("INSERT OR IGNORE INTO tx_kv (kv, pos) VALUES (?, ?)");
    this.#byHash = db.prepare("SELECT hash, height, idx, tx, result FROM txs WHERE hash = ?");
    this.#byHeight = db.prepare(
      "SELECT hash, height, idx, tx, result FROM txs WHERE height = ? ORDER BY idx",
    );
    // Index rows of pruned txs may linger (they are cleaned up lazily); the join drops them.
    this.#byAttr = db.prepare(
      `SELECT t.hash, t.height, t.idx, t.tx, t.result FROM tx_kv a
       JOIN txs t ON t.height = (a.pos >> 20) AND t.idx = (a.pos & 1048575)
       WHERE a.kv = ? ORDER BY a.pos`,
    );
    this.#all = db.prepare("SELECT hash, height, idx, tx, result FROM txs ORDER BY height, idx");
  }

  /** Called inside the block's transaction; `resultTexts` are the results as JSON text. */
  add(txs: CommittedTx[], resultTexts: string[]): void {
    txs.forEach((t, i) => {
      this.#insertTx.run(t.hash, t.height, t.index, t.tx, resultTexts[i] ?? JSON.stringify(t.result));
      const pos = t.height * 1048576 + t.index;
      for (const e of t.result.events) {
        if (e.type === "") continue;
        for (const a of e.attributes) {
          if (!a.index || a.key === "") continue;
          this.#insertAttr.run(`${e.type}.${a.key}=${a.value}`, pos);
        }
      }
    });
  }

  prune(maxHeight: number): void {
    this.#db.prepare("DELETE FROM txs WHERE height <= ?").run(maxHeight);
    // The attribute index is keyed by attribute, not height: sweep it now and then.
    if (maxHeight % 1000 === 0)
      this.#db.prepare("DELETE FROM tx_kv WHERE pos < ?").run((maxHeight + 1) * 1048576);
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
    else if (attr) rows = this.#byAttr.all(`${attr.key}=${String(attr.value)}`);
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
