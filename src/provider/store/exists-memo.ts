import type Database from "better-sqlite3";

/**
 * Remembered answers of one "is there a row for this key?" query, for the reads `GET
 * status` makes on every poll (a tenant polls far more often than its lease changes).
 * In step with the table by construction: every statement that writes the table calls
 * `changed()` (which forgets everything), answers are remembered only outside a
 * transaction (so a rolled-back write leaves nothing behind), and never on a read-only
 * connection (its writer is another process, whose writes this one cannot see coming).
 * Sound because the store's own connection is the only writer of these tables.
 */
export class ExistsMemo {
  readonly #db: Database.Database;
  readonly #max: number;
  readonly #known = new Map<string, boolean>();

  constructor(db: Database.Database, max = 10_000) {
    this.#db = db;
    this.#max = max;
  }

  /** `read()`'s answer for `key`, from memory while no write happened since it was read. */
  has(key: string, read: (key: string) => boolean): boolean {
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
