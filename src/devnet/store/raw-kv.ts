/**
 * The unmetered layers under a module's KVStore. `SqliteKV` reads and writes the committed
 * state table directly (block execution runs inside one SQLite transaction with a savepoint
 * per tx, so it is atomic); `OverlayKV` keeps writes in memory over a parent (CheckTx state
 * and Simulate, which must never touch the database).
 */
import type Database from "better-sqlite3";

export interface RawKV {
  get(key: string): Uint8Array | undefined;
  set(key: string, value: Uint8Array): void;
  delete(key: string): void;
  /** Entries with lo <= key < hi (hi undefined = no upper bound), ascending or descending. */
  iterate(lo: string, hi: string | undefined, reverse: boolean): Generator<[string, Uint8Array]>;
}

const PAGE = 128;
const CACHE_LIMIT = 500_000;

export class SqliteKV implements RawKV {
  readonly #get: Database.Statement<[string], { value: Buffer }>;
  readonly #set: Database.Statement<[string, Uint8Array]>;
  readonly #del: Database.Statement<[string]>;
  readonly #pages = new Map<string, Database.Statement<unknown[], { key: string; value: Buffer }>>();
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#get = db.prepare("SELECT value FROM state WHERE key = ?");
    this.#set = db.prepare(
      "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    );
    this.#del = db.prepare("DELETE FROM state WHERE key = ?");
  }

  /**
   * Read-through cache of state as written (null = known absent). Writes go to SQLite at
   * once; if a block's SQLite transaction rolls back, the owner must call dropCache().
   */
  readonly #cache = new Map<string, Uint8Array | null>();

  get(key: string): Uint8Array | undefined {
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached ?? undefined;
    const value = this.#get.get(key)?.value;
    if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
    this.#cache.set(key, value ?? null);
    return value;
  }

  set(key: string, value: Uint8Array): void {
    this.#set.run(key, value);
    this.#cache.set(key, value);
  }

  delete(key: string): void {
    this.#del.run(key);
    this.#cache.set(key, null);
  }

  dropCache(): void {
    this.#cache.clear();
  }

  #page(hasHi: boolean, hasCursor: boolean, reverse: boolean) {
    const shape = `${hasHi}/${hasCursor}/${reverse}`;
    let stmt = this.#pages.get(shape);
    if (!stmt) {
      const where = ["key >= ?"];
      if (hasHi) where.push("key < ?");
      if (hasCursor) where.push(reverse ? "key < ?" : "key > ?");
      stmt = this.#db.prepare(
        `SELECT key, value FROM state WHERE ${where.join(" AND ")} ORDER BY key ${reverse ? "DESC" : "ASC"} LIMIT ${PAGE}`,
      );
      this.#pages.set(shape, stmt);
    }
    return stmt;
  }

  /** Reads in pages so callers may write between steps (better-sqlite3 forbids that mid-statement). */
  *iterate(lo: string, hi: string | undefined, reverse: boolean): Generator<[string, Uint8Array]> {
    let cursor: string | undefined;
    for (;;) {
      const args: unknown[] = [lo];
      if (hi !== undefined) args.push(hi);
      if (cursor !== undefined) args.push(cursor);
      const rows = this.#page(hi !== undefined, cursor !== undefined, reverse).all(...args);
      for (const row of rows) yield [row.key, row.value];
      if (rows.length < PAGE) return;
      cursor = rows[rows.length - 1]?.key;
    }
  }
}

/** Pending writes over a parent; `null` marks a deletion. */
export class OverlayKV implements RawKV {
  readonly writes = new Map<string, Uint8Array | null>();

  constructor(readonly parent: RawKV) {}

  get(key: string): Uint8Array | undefined {
    const w = this.writes.get(key);
    if (w === null) return undefined;
    return w ?? this.parent.get(key);
  }

  set(key: string, value: Uint8Array): void {
    this.writes.set(key, value);
  }

  delete(key: string): void {
    this.writes.set(key, null);
  }

  /** Merges the parent's entries with this layer's writes (as they were when iteration began). */
  *iterate(lo: string, hi: string | undefined, reverse: boolean): Generator<[string, Uint8Array]> {
    const mine = [...this.writes.entries()]
      .filter(([k]) => k >= lo && (hi === undefined || k < hi))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (reverse) mine.reverse();
    const before = (a: string, b: string) => (reverse ? a > b : a < b);
    let i = 0;
    for (const [key, value] of this.parent.iterate(lo, hi, reverse)) {
      while (i < mine.length && before((mine[i] as [string, unknown])[0], key)) {
        const [k, v] = mine[i++] as [string, Uint8Array | null];
        if (v !== null) yield [k, v];
      }
      const next = mine[i];
      if (next && next[0] === key) {
        i++;
        if (next[1] !== null) yield [key, next[1]];
        continue;
      }
      yield [key, value];
    }
    for (; i < mine.length; i++) {
      const [k, v] = mine[i] as [string, Uint8Array | null];
      if (v !== null) yield [k, v];
    }
  }

  /** Applies this layer's writes to the parent. */
  flush(): void {
    for (const [k, v] of this.writes) {
      if (v === null) this.parent.delete(k);
      else this.parent.set(k, v);
    }
    this.writes.clear();
  }
}
