import { closeSync, existsSync, fstatSync, fsync, openSync } from "node:fs";
import type Database from "better-sqlite3";

/**
 * Group commit for a SQLite database in WAL mode, shared by providerd's placement store
 * and the backends' journals. Transactions commit without their own fsync
 * (`synchronous = OFF`), so a commit costs no disk wait on the event loop; whoever is
 * about to make a commit visible outside the process (a 202, a backend call, a callback
 * answer, a substrate call) awaits `durable()`, and one asynchronous fsync of the WAL
 * file (on libuv's thread pool) covers every commit made before it started. Torn tails
 * after a power loss are discarded by the WAL checksums, and nothing un-fsynced was ever
 * acknowledged. Checkpoints run explicitly with `synchronous = FULL`, so the database
 * file is synced before the WAL is reused.
 *
 * `write()` goes one step further (the backend journal uses it): the writes of one
 * event-loop turn share one SQLite transaction, each inside its own savepoint, and that
 * transaction commits when the turn ends. A commit writes every page it touched to the
 * WAL, and a burst's writes touch the same few pages (the tables' tails, the index
 * leaves), so one commit per turn instead of one per write cuts the journal's CPU by more
 * than half. It loses nothing a reader outside could have relied on: `durable()` commits
 * the open transaction before its fsync, and until then a SIGKILL loses no more than a
 * power loss already could. A commit that fails leaves the database refusing every
 * later write and `durable()` (its callers' in-memory state may no longer match the
 * file), until it is reopened.
 */
const CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024;

/** Runs `work` in a transaction, or in a savepoint when one is already open (better-sqlite3). */
export type Atomic = (work: () => unknown) => unknown;

export class WalDurability {
  readonly #db: Database.Database;
  readonly #walFd: number | undefined;
  #committed = 0;
  #flushed = 0;
  #flushing = false;
  #waiters: { target: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  /** The turn's shared transaction is open (see write()); it commits at the turn's end. */
  #batchOpen = false;
  #closed = false;
  /** Why the database refuses writes: a shared transaction that failed to commit. */
  #broken: Error | undefined;
  /** The database's one transaction wrapper; inside the turn's transaction it nests as a savepoint. */
  readonly #atomic: Atomic;

  /** `atomic` is `db.transaction((work) => work())`, built once by the opener. */
  constructor(db: Database.Database, path: string, atomic: Atomic) {
    this.#db = db;
    this.#atomic = atomic;
    const wal = `${path}-wal`;
    if (path === ":memory:" || !existsSync(wal)) return; // nothing to group: every commit is already final
    this.#walFd = openSync(wal, "r+");
    db.pragma("wal_autocheckpoint = 0");
    db.pragma("synchronous = OFF");
  }

  /** Why the database refuses writes (a turn's commit failed), or undefined while it works. */
  get failure(): Error | undefined {
    return this.#broken;
  }

  /** Records that a write transaction committed. */
  committed(): void {
    this.#committed++;
  }

  /**
   * Runs `fn` as one atomic write: inside this turn's shared transaction (opened on the
   * first write of the turn) as a savepoint, so a throw undoes `fn`'s writes alone. Counts
   * toward the next `durable()`. Without group commit, `fn` is its own transaction.
   */
  write<T>(fn: () => T): T {
    if (this.#broken !== undefined) throw this.#broken;
    if (this.#walFd !== undefined && !this.#db.inTransaction) {
      this.#db.exec("BEGIN IMMEDIATE");
      this.#batchOpen = true;
      setImmediate(() => this.#endTurn());
    }
    const result = this.#atomic(fn) as T;
    this.#committed++;
    return result;
  }

  /** Resolves once every commit made so far is on stable storage. */
  durable(): Promise<void> {
    if (this.#broken !== undefined) return Promise.reject(this.#broken);
    if (this.#walFd === undefined || this.#flushed >= this.#committed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waiters.push({ target: this.#committed, resolve, reject });
      // With the turn's transaction still open, the turn's end commits it and flushes.
      if (!this.#batchOpen) this.#flush();
    });
  }

  #endTurn(): void {
    this.#commitBatch();
    if (this.#waiters.length > 0) this.#flush();
  }

  #commitBatch(): void {
    if (!this.#batchOpen) return;
    this.#batchOpen = false;
    if (!this.#db.open) return;
    try {
      this.#db.exec("COMMIT");
    } catch (err) {
      const why = (err as Error).message;
      this.#broken = new Error(`commit failed; the database refuses writes until reopened: ${why}`, {
        cause: err,
      });
      if (this.#db.inTransaction) this.#db.exec("ROLLBACK");
      for (const w of this.#waiters.splice(0)) w.reject(this.#broken);
    }
  }

  #flush(): void {
    if (this.#flushing || this.#closed || this.#walFd === undefined || this.#broken !== undefined) return;
    this.#commitBatch();
    if (this.#broken !== undefined) return;
    this.#flushing = true;
    const upTo = this.#committed;
    fsync(this.#walFd, (err) => {
      this.#flushing = false;
      if (this.#closed) return; // close() settled the waiters
      if (err) {
        for (const w of this.#waiters.splice(0)) w.reject(err);
        return;
      }
      this.#flushed = Math.max(this.#flushed, upTo);
      const ready = this.#waiters.filter((w) => w.target <= this.#flushed);
      this.#waiters = this.#waiters.filter((w) => w.target > this.#flushed);
      for (const w of ready) w.resolve();
      this.#maybeCheckpoint();
      if (this.#waiters.length > 0 && !this.#batchOpen) this.#flush();
    });
  }

  #maybeCheckpoint(): void {
    if (this.#walFd === undefined || !this.#db.open || this.#db.inTransaction) return;
    if (fstatSync(this.#walFd).size < CHECKPOINT_WAL_BYTES) return;
    this.#db.pragma("synchronous = FULL");
    try {
      this.#db.pragma("wal_checkpoint(TRUNCATE)");
    } finally {
      this.#db.pragma("synchronous = OFF");
    }
  }

  /** Makes everything durable synchronously (shutdown) and releases the WAL handle. */
  close(): void {
    if (this.#walFd === undefined || this.#closed) return;
    this.#closed = true;
    if (this.#db.open) {
      this.#commitBatch();
      this.#db.pragma("synchronous = FULL");
      this.#db.pragma("wal_checkpoint(TRUNCATE)");
      // The checkpoint synced every commit into the database file: nobody waits any longer.
      if (this.#broken === undefined) for (const w of this.#waiters.splice(0)) w.resolve();
    }
    closeSync(this.#walFd);
  }
}
