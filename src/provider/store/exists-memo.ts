import type Database from "better-sqlite3";

/**
 * Remembered answers of one "is there a row for this key?" query, for the reads `GET
 * status` makes on every poll (a tenant polls far more often than its lease changes).
 * In step with the table by construction: every statement that writes the table calls
 * `changed()` (which forgets everything), answers are remembered only outside a
 * transaction (so a rolled-back write leaves nothing behind), and never on a read-only
 * connection (its writer is another process, whose writes this one cannot see coming).
 * Another connection writing the same file (a tool, a test, a second process) is caught
 * by SQLite's `data_version`, which changes whenever another connection commits: the memo
 * is dropped then, so nothing depends on this connection being the only writer.
 */
export class ExistsMemo {
  readonly #db: Database.Database;
  readonly #max: number;
  readonly #known = new Map<string, boolean>();
  readonly #dataVersion: Database.Statement<[], number>;
  #seenVersion: number | undefined;

  constructor(db: Database.Database, max = 10_000) {
    this.#db = db;
    this.#max = max;
    this.#dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
  }

  /** `read()`'s answer for `key`, from memory while no write happened since it was read. */
  has(key: string, read: (key: string) => boolean): boolean {
    const version = this.#dataVersion.get();
    if (version !== this.#seenVersion) {
      this.#known.clear(); // another connection committed: any answer may be stale
      this.#seenVersion = version;
    }
    const known = this.#known.get(key);
    if (known !== undefined) return known;
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
}
