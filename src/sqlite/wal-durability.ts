import { closeSync, existsSync, fstatSync, fsync, openSync } from "node:fs";
import type Database from "better-sqlite3";

/**
 * Group commit for a SQLite database in WAL mode: the one design every SQLite writer
 * here uses that commits without waiting for the disk (providerd's placement and payload
 * stores, the backends' journals). Transactions commit without their own fsync
 * (`synchronous = OFF`), so a commit costs no disk wait on the event loop; whoever is
 * about to make a commit visible outside the process (a 202, a backend call, a callback
 * answer, a substrate call) awaits `durable()`, and one asynchronous fsync of the WAL
 * file (on libuv's thread pool) covers every commit made before it started. Torn tails
 * after a power loss are discarded by the WAL checksums, and nothing un-fsynced was ever
 * acknowledged. Checkpoints run explicitly with `synchronous = FULL`, so the database
 * file is synced before the WAL is reused.
 *
 * `write()` goes one step further (the backend journal and the placement store use it):
 * the writes of one event-loop turn share one SQLite transaction, each inside its own
 * savepoint (a write that throws undoes its own changes, not its neighbours'), and that
 * transaction commits when the turn ends. So a burst of callers (a block's provision
 * attempts, a batch of callbacks) costs one commit and one fsync, with no queue between
 * them and the database: each caller writes synchronously and then awaits `durable()`.
 * A commit writes every page it touched to the WAL, and a burst's writes touch the same
 * few pages (the tables' tails, the index leaves), so one commit per turn instead of one
 * per write cuts the journal's CPU by more than half. It loses nothing a reader outside
 * could have relied on: `durable()` commits the open transaction before its fsync, and
 * until then a SIGKILL loses no more than a power loss already could. A commit that fails
 * leaves the database refusing every later write and `durable()` (its callers' in-memory
 * state may no longer match the file), until it is reopened. An online backup
 * (`duringBackup()`) must never step over a transaction left open on its source
 * connection (it copies an inconsistent file without an error), so while one runs every
 * write commits on its own.
 */
const CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024;

/** Runs `work` in a transaction, or in a savepoint when one is already open (better-sqlite3). */
export type Atomic = (work: () => unknown) => unknown;

/**
 * Where commits become durable when not in this file's WAL: a database kept in memory
 * whose every commit is copied elsewhere (providerd's placement store on PostgreSQL,
 * src/provider/store/pg/placement-mirror.ts). Group commit works as with a WAL file, with
 * `persist()` in place of the fsync.
 */
export interface CommitSink {
  /**
   * Makes every commit made before the call durable. It must take what it sends before
   * its first await (commits made later count toward the next call); when it rejects,
   * those commits are still to send, and the next call sends them.
   */
  persist(): Promise<void>;
  /** Set once the sink can never persist again: the database then refuses every write. */
  readonly failure: Error | undefined;
}

export class WalDurability {
  readonly #db: Database.Database;
  readonly #walFd: number | undefined;
  /** Makes the commits so far durable (the WAL's fsync, or the sink's persist); unset: every commit is final. */
  readonly #persist: (() => Promise<void>) | undefined;
  readonly #sink: CommitSink | undefined;
  #committed = 0;
  #flushed = 0;
  #flushing = false;
  #waiters: { target: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  /** The turn's shared transaction is open (see write()); it commits at the turn's end. */
  #batchOpen = false;
  #closed = false;
  /** Why the database refuses writes: a shared transaction that failed to commit. */
  #broken: Error | undefined;
  /** Online backups in progress: while any runs, write() opens no shared transaction. */
  #backups = 0;
  /** Shared transactions committed and WAL fsyncs done so far (benchmarks, tests). */
  readonly #stats = { transactions: 0, fsyncs: 0 };
  /** The database's one transaction wrapper; inside the turn's transaction it nests as a savepoint. */
  readonly #atomic: Atomic;

  /**
   * `atomic` is `db.transaction((work) => work())`, built once by the opener. With a
   * `sink`, commits are durable once it persisted them (the database is in memory).
   */
  constructor(db: Database.Database, path: string, atomic: Atomic, sink?: CommitSink) {
    this.#db = db;
    this.#atomic = atomic;
    if (sink !== undefined) {
      this.#sink = sink;
      this.#persist = () => sink.persist();
      return;
    }
    const wal = `${path}-wal`;
    if (path === ":memory:" || !existsSync(wal)) return; // nothing to group: every commit is already final
    const walFd = openSync(wal, "r+");
    this.#walFd = walFd;
    this.#persist = () =>
      new Promise((resolve, reject) => fsync(walFd, (err) => (err ? reject(err) : resolve())));
    db.pragma("wal_autocheckpoint = 0");
    db.pragma("synchronous = OFF");
  }

  /** Why the database refuses writes (a turn's commit failed, or the sink can persist no more), or undefined. */
  get failure(): Error | undefined {
    return this.#broken ?? this.#sink?.failure;
  }

  /** Shared transactions committed and fsyncs done so far. */
  get stats(): { transactions: number; fsyncs: number } {
    return { ...this.#stats };
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
    this.#joinTurn();
    const result = this.#atomic(fn) as T;
    this.#committed++;
    return result;
  }

  /**
   * `write()` for an `fn` that runs exactly one statement: a statement is atomic by itself,
   * so it joins the turn's transaction without a savepoint of its own (two statements
   * fewer on a hot path such as the provision attempt).
   */
  writeStatement<T>(fn: () => T): T {
    this.#joinTurn();
    const result = fn();
    this.#committed++;
    return result;
  }

  /** Refuses writes once broken; the turn's first write opens its shared transaction. */
  #joinTurn(): void {
    const failure = this.failure;
    if (failure !== undefined) throw failure;
    if (this.#persist !== undefined && this.#backups === 0 && !this.#db.inTransaction) {
      this.#db.exec("BEGIN IMMEDIATE");
      this.#batchOpen = true;
      setImmediate(() => this.#endTurn());
    }
  }

  /**
   * Runs `copy` (an online backup of this database) with no shared transaction open: the
   * open one commits first, and until `copy` settles every write is its own transaction.
   */
  async duringBackup(copy: () => Promise<void>): Promise<void> {
    this.#commitBatch();
    if (this.#broken !== undefined) throw this.#broken;
    this.#backups++;
    try {
      await copy();
    } finally {
      this.#backups--;
    }
  }

  /** Whether every commit made so far is on stable storage now (`durable()` would not wait). */
  get allDurable(): boolean {
    if (this.failure !== undefined) return false;
    return this.#persist === undefined || (!this.#batchOpen && this.#flushed >= this.#committed);
  }

  /** Resolves once every commit made so far is on stable storage. */
  durable(): Promise<void> {
    const failure = this.failure;
    if (failure !== undefined) return Promise.reject(failure);
    if (this.#persist === undefined || this.#flushed >= this.#committed) return Promise.resolve();
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
      this.#stats.transactions++;
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
    const persist = this.#persist;
    if (this.#flushing || this.#closed || persist === undefined || this.#broken !== undefined) return;
    this.#commitBatch();
    if (this.#broken !== undefined) return;
    this.#flushing = true;
    const upTo = this.#committed;
    let persisted: Promise<void>;
    try {
      persisted = persist();
    } catch (err) {
      persisted = Promise.reject(err);
    }
    persisted.then(
      () => {
        this.#flushing = false;
        if (this.#closed) return; // close() settled the waiters
        this.#stats.fsyncs++;
        this.#flushed = Math.max(this.#flushed, upTo);
        const ready = this.#waiters.filter((w) => w.target <= this.#flushed);
        this.#waiters = this.#waiters.filter((w) => w.target > this.#flushed);
        for (const w of ready) w.resolve();
        this.#maybeCheckpoint();
        if (this.#waiters.length > 0 && !this.#batchOpen) this.#flush();
      },
      (err: unknown) => {
        this.#flushing = false;
        if (this.#closed) return;
        for (const w of this.#waiters.splice(0)) w.reject(err);
      },
    );
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

  /**
   * Makes everything durable synchronously (shutdown) and releases the WAL handle. A sink
   * cannot persist synchronously: whoever closes awaits `durable()` first, and anything
   * committed after that is refused to its waiters, as a crash would lose it.
   */
  close(): void {
    if (this.#closed) return;
    if (this.#sink !== undefined) {
      this.#closed = true;
      this.#commitBatch();
      const closed = new Error("the database closed before these commits were persisted");
      for (const w of this.#waiters.splice(0)) w.reject(closed);
      return;
    }
    if (this.#walFd === undefined) return;
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
