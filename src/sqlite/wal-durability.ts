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
 */
const CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024;

export class WalDurability {
  readonly #db: Database.Database;
  readonly #walFd: number | undefined;
  #committed = 0;
  #flushed = 0;
  #flushing = false;
  #waiters: { target: number; resolve: () => void; reject: (e: unknown) => void }[] = [];

  constructor(db: Database.Database, path: string) {
    this.#db = db;
    const wal = `${path}-wal`;
    if (path === ":memory:" || !existsSync(wal)) return; // nothing to group: every commit is already final
    this.#walFd = openSync(wal, "r+");
    db.pragma("wal_autocheckpoint = 0");
    db.pragma("synchronous = OFF");
  }

  /** Records that a write transaction committed. */
  committed(): void {
    this.#committed++;
  }

  /** Resolves once every commit made so far is on stable storage. */
  durable(): Promise<void> {
    if (this.#walFd === undefined || this.#flushed >= this.#committed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waiters.push({ target: this.#committed, resolve, reject });
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#flushing || this.#walFd === undefined) return;
    this.#flushing = true;
    const upTo = this.#committed;
    fsync(this.#walFd, (err) => {
      this.#flushing = false;
      if (err) {
        for (const w of this.#waiters.splice(0)) w.reject(err);
        return;
      }
      this.#flushed = Math.max(this.#flushed, upTo);
      const ready = this.#waiters.filter((w) => w.target <= this.#flushed);
      this.#waiters = this.#waiters.filter((w) => w.target > this.#flushed);
      for (const w of ready) w.resolve();
      this.#maybeCheckpoint();
      if (this.#waiters.length > 0) this.#flush();
    });
  }

  #maybeCheckpoint(): void {
    if (this.#walFd === undefined || !this.#db.open) return;
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
    if (this.#walFd === undefined) return;
    if (this.#db.open) {
      this.#db.pragma("synchronous = FULL");
      this.#db.pragma("wal_checkpoint(TRUNCATE)");
    }
    closeSync(this.#walFd);
  }
}
