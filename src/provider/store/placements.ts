import type Database from "better-sqlite3";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid, isUuidV4, uuidBytes, uuidText } from "../../core/uuid.ts";
import { ReadMemo, type SqliteDatabase } from "../../sqlite/index.ts";
import type { BackendFleet } from "./backend-fleet.ts";
import type {
  Attempt,
  AttemptKind,
  InventoryOutcome,
  Placement,
  PlacementTuple,
  RecordResult,
  SettleResult,
} from "./placement-records.ts";
import { RetainedRows } from "./retained-rows.ts";

/**
 * The placements room of the placement store: providerd's authority on *where* each lease
 * was placed, and the write-ahead attempts that get it there. The safety rule: an attempt
 * row is committed before any backend call and disappears only on positive evidence (the
 * exact operation's callback, a positive inventory report) or a definite synchronous
 * refusal. Nothing here ever infers from absence.
 *
 * Commits do not wait for the disk: a caller about to act on a write outside the process
 * (call a backend, answer a callback, send a chain tx) first awaits `durable()`. The
 * writes of one event-loop turn share one transaction (each in its own savepoint), and
 * one fsync on the thread pool serves every commit made before it (see WalDurability):
 * a block's worth of provision attempts costs one commit and one fsync.
 */

// The rows as SQLite holds them (UUIDs as their 16 raw bytes), and how they are read.

interface PlacementRow {
  lease_uuid: Buffer;
  state: "confirmed" | "conflict";
  owner: string | null;
  lifecycle_id: Buffer | null;
  candidates: string;
  updated_at: number;
}

interface AttemptRow {
  operation_id: Buffer;
  lease_uuid: Buffer;
  backend: string;
  kind: AttemptKind;
  created_at: number;
}

function toPlacement(r: PlacementRow): Placement {
  return {
    leaseUuid: uuidText(r.lease_uuid),
    state: r.state,
    owner: r.owner ?? undefined,
    lifecycleId: r.lifecycle_id === null ? undefined : uuidText(r.lifecycle_id),
    candidates: JSON.parse(r.candidates) as string[],
    updatedAt: r.updated_at,
  };
}

function toAttempt(r: AttemptRow): Attempt {
  return {
    operationId: uuidText(r.operation_id),
    leaseUuid: uuidText(r.lease_uuid),
    backend: r.backend,
    kind: r.kind,
    createdAt: r.created_at,
  };
}

/**
 * Every statement the room runs, typed and prepared once per connection. The two that
 * write the attempts table tell `attempts` first (the memo `hasAttempt` answers from).
 */
function prepare(db: Database.Database, attempts: ReadMemo<boolean>) {
  return {
    insertAttempt: attempts.writes(
      db.prepare<[Buffer, Buffer, string, AttemptKind, number]>(
        "INSERT OR IGNORE INTO attempts (operation_id, lease_uuid, backend, kind, created_at) VALUES (?, ?, ?, ?, ?)",
      ),
    ),
    attemptByLease: db.prepare<[Buffer], AttemptRow>("SELECT * FROM attempts WHERE lease_uuid = ?"),
    // GET status asks on every poll whether an attempt exists: no row to build for that.
    hasAttempt: db.prepare<[Buffer], number>("SELECT 1 FROM attempts WHERE lease_uuid = ?").pluck(),
    attemptsCreatedBy: db.prepare<[number], AttemptRow>(
      "SELECT * FROM attempts WHERE created_at <= ? ORDER BY created_at, operation_id",
    ),
    attempts: db.prepare<[], AttemptRow>("SELECT * FROM attempts ORDER BY created_at, operation_id"),
    deleteAttempt: attempts.writes(db.prepare<[Buffer]>("DELETE FROM attempts WHERE lease_uuid = ?")),
    placement: db.prepare<[Buffer], PlacementRow>("SELECT * FROM placements WHERE lease_uuid = ?"),
    placements: db.prepare<[], PlacementRow>("SELECT * FROM placements ORDER BY lease_uuid"),
    // The UUID's text comes from SQLite and each row is a plain array: no Buffer, no object per row.
    placementTuples: db
      .prepare<[], PlacementTuple>(
        `SELECT lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' ||
                substr(h, 17, 4) || '-' || substr(h, 21)), state, owner, candidates, updated_at,
                lifecycle_id IS NULL
         FROM (SELECT hex(lease_uuid) AS h, * FROM placements ORDER BY lease_uuid)`,
      )
      .raw(),
    deletePlacement: db.prepare<[Buffer]>("DELETE FROM placements WHERE lease_uuid = ?"),
    upsertPlacement: db.prepare<[Buffer, Placement["state"], string | null, Buffer | null, string, number]>(
      `INSERT INTO placements (lease_uuid, state, owner, lifecycle_id, candidates, updated_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(lease_uuid) DO UPDATE SET state = excluded.state, owner = excluded.owner,
         lifecycle_id = excluded.lifecycle_id, candidates = excluded.candidates,
         updated_at = excluded.updated_at`,
    ),
    // Read on every /metrics scrape: one statement, one pass over each table.
    counts: db.prepare<[], { placements: number; conflicts: number; attempts: number }>(
      `SELECT (SELECT count(*) FROM placements WHERE state = 'confirmed') AS placements,
              (SELECT count(*) FROM placements WHERE state = 'conflict') AS conflicts,
              (SELECT count(*) FROM attempts) AS attempts`,
    ),
  };
}

export class Placements {
  readonly #database: SqliteDatabase;
  readonly #db: Database.Database;
  readonly #stmt: ReturnType<typeof prepare>;
  /** Which backends an attempt may name. */
  readonly #fleet: Pick<BackendFleet, "isPinned">;
  /** The retained side of the placement rows (retention and restore). */
  readonly retained: RetainedRows;
  /** `hasAttempt`'s answers, forgotten by every write of the attempts table. */
  readonly #attempts: ReadMemo<boolean>;

  constructor(database: SqliteDatabase, fleet: Pick<BackendFleet, "isPinned">) {
    this.#database = database;
    this.#db = database.db;
    this.#fleet = fleet;
    this.#attempts = new ReadMemo<boolean>(this.#db);
    this.#stmt = prepare(this.#db, this.#attempts);
    this.retained = new RetainedRows(this.#db);
  }

  /**
   * The connection, for modules that keep their own tables in this file (the maintenance
   * journal): their writes join `batch()` transactions and `durable()` covers them.
   */
  get db(): Database.Database {
    return this.#db;
  }

  /** Resolves once every commit made so far to this database (any room's) is on stable storage. */
  durable(): Promise<void> {
    // Conservatively count a commit: callers ask right after their writes.
    this.#database.committed();
    return this.#database.durable();
  }

  /**
   * Writes attempts ahead of their backend calls, atomically; await `durable()` before
   * calling any backend. A lease that already has an unresolved attempt is left untouched.
   */
  recordAttempts(attempts: readonly Attempt[]): RecordResult[] {
    for (const a of attempts) this.#checkAttempt(a);
    return this.#atomic(() => attempts.map((a) => this.#insertAttempt(a)));
  }

  /** One attempt (the provisioner's hot path): a single statement, atomic without a savepoint. */
  recordAttempt(attempt: Attempt): RecordResult {
    this.#checkAttempt(attempt);
    return this.#database.writeStatement(() => this.#insertAttempt(attempt));
  }

  #insertAttempt(a: Attempt): RecordResult {
    const r = this.#stmt.insertAttempt.run(
      uuidBytes(a.operationId),
      uuidBytes(a.leaseUuid),
      a.backend,
      a.kind,
      a.createdAt,
    );
    return r.changes === 1 ? "recorded" : "lease-busy";
  }

  /**
   * Durable restore admission, in one transaction: the target has no placement and no
   * attempt, the retained `source` is claimed at the attempt's backend (its owner) with no
   * other restore in flight, and the target's restore attempt is written. Await `durable()`
   * before calling the backend.
   */
  beginRestore(attempt: Attempt, source: string): "recorded" | "target-busy" | "source-busy" {
    this.#checkAttempt(attempt);
    return this.#atomic(() => {
      const target = attempt.leaseUuid;
      if (this.attemptFor(target) !== undefined || this.placement(target) !== undefined) return "target-busy";
      if (!this.retained.claimForRestore(source, target, attempt.backend)) return "source-busy";
      this.#stmt.insertAttempt.run(
        uuidBytes(attempt.operationId),
        uuidBytes(target),
        attempt.backend,
        "restore",
        attempt.createdAt,
      );
      return "recorded";
    });
  }

  #checkAttempt(a: Attempt): void {
    if (!isUuidV4(a.operationId)) {
      throw new FredError("ERR_PLACEMENT_ATTEMPT", "operation id must be a canonical UUIDv4");
    }
    if (!isCanonicalUuid(a.leaseUuid))
      throw new FredError("ERR_PLACEMENT_ATTEMPT", "lease UUID must be canonical");
    if (!this.#fleet.isPinned(a.backend)) {
      throw new FredError(
        "ERR_PLACEMENT_UNKNOWN_BACKEND",
        `backend ${a.backend} is not pinned in the placement store`,
      );
    }
  }

  /**
   * Applies the exact operation's callback (lease from the body, operation id from the
   * authenticated URL). `success` confirms the attempted backend as owner (or records a
   * conflict when another backend already owns the lease); `failed` clears the attempt and,
   * when the lease had no placement, records the attempted backend as its place: that
   * backend keeps the failed operation's record, so the lease is no longer "genuinely
   * recordless" new work that a partial sweep may give another backend (one did, while the
   * failed backend was silent, and the lease ran twice). The record carries no lifecycle
   * id, as one learned from an inventory: the failed operation's lifecycle callbacks (a
   * teardown that retained data) change nothing, and the sweep prunes it once the lease
   * has ended and the backend holds nothing.
   * An unknown, stale or already settled id changes nothing; so does an attempt at another
   * backend than `from` (the backend that called back), when given.
   */
  settleOperation(
    leaseUuid: string,
    operationId: string,
    outcome: "success" | "failed",
    now: number,
    from?: string,
  ): SettleResult {
    return this.#atomic((): SettleResult => {
      const row = this.#exactAttempt(leaseUuid, operationId);
      if (row === undefined || (from !== undefined && row.backend !== from))
        return { kind: "unknown-operation" };
      const attempt = toAttempt(row);
      this.#stmt.deleteAttempt.run(row.lease_uuid);
      this.retained.attemptEnded(
        row.lease_uuid,
        row.kind,
        outcome === "success" ? "committed" : "handed-back",
      );
      const placement =
        outcome === "success"
          ? this.#claim(attempt.leaseUuid, attempt.backend, now, attempt.operationId)
          : (this.placement(attempt.leaseUuid) ??
            this.#claim(attempt.leaseUuid, attempt.backend, now, undefined));
      return { kind: "settled", attempt, placement };
    });
  }

  /** A definite synchronous refusal from the attempted backend: the attempt never took. */
  clearRefusedAttempt(leaseUuid: string, operationId: string): Attempt | undefined {
    return this.#atomic(() => {
      const row = this.#exactAttempt(leaseUuid, operationId);
      if (row === undefined) return undefined;
      this.#stmt.deleteAttempt.run(row.lease_uuid);
      this.retained.attemptEnded(row.lease_uuid, row.kind, "handed-back");
      return toAttempt(row);
    });
  }

  /**
   * Runs `fn` as one atomic write: if it throws, everything it wrote is undone (store calls
   * inside it nest as savepoints), and nothing else is. It commits with the rest of the
   * turn's writes; await `durable()` before acting on it outside the process.
   */
  batch<T>(fn: () => T): T {
    return this.#database.write(fn);
  }

  /** Why the store refuses writes (a turn's commit failed; see WalDurability), or undefined. */
  get failure(): Error | undefined {
    return this.#database.failure;
  }

  /** `fn` atomically, in the turn's shared transaction (see `batch`). */
  #atomic<T>(fn: () => T): T {
    return this.#database.write(fn);
  }

  /**
   * The owning backend reported the lease's teardown complete (`deprovisioned` on its
   * lifecycle URL): the confirmed placement is removed. Only the recorded owner can do
   * this; a conflict or another backend's report changes nothing.
   */
  retirePlacement(leaseUuid: string, backend: string): boolean {
    const p = this.placement(leaseUuid);
    if (p?.state !== "confirmed" || p.owner !== backend) return false;
    return this.#stmt.deletePlacement.run(uuidBytes(leaseUuid)).changes === 1;
  }

  /**
   * The owner's own record of a live lease names the lifecycle (`lifecycle_generation`) a
   * confirmed placement without one lost or never had: the id is restored, so lifecycle
   * callbacks, restarts and updates reach the lease again. Any other record is left alone.
   */
  restoreLifecycle(leaseUuid: string, backend: string, lifecycleId: string): boolean {
    // The id comes from a backend's record: only a canonical (lowercase) UUIDv4 is taken.
    if (!isUuidV4(lifecycleId) || lifecycleId !== lifecycleId.toLowerCase()) return false;
    const p = this.placement(leaseUuid);
    if (p?.state !== "confirmed" || p.owner !== backend || p.lifecycleId !== undefined) return false;
    this.#stmt.upsertPlacement.run(
      uuidBytes(leaseUuid),
      "confirmed",
      backend,
      uuidBytes(lifecycleId),
      "[]",
      p.updatedAt,
    );
    return true;
  }

  /**
   * The reconciler located a recordless lease on exactly one backend (every peer answered
   * absence), or a sole quarantine candidate now accounts for it: that backend becomes the
   * confirmed owner. No operation id confirmed it, so lifecycle callbacks stay unmatched and
   * the placement-pruning pass retires the record once the lease has ended.
   */
  adoptPlacement(leaseUuid: string, backend: string, now: number): void {
    if (!isCanonicalUuid(leaseUuid)) return;
    this.#stmt.upsertPlacement.run(uuidBytes(leaseUuid), "confirmed", backend, null, "[]", now);
  }

  /** Durable quarantine: the lease is deferred until an operator resolves `candidates`. */
  quarantine(leaseUuid: string, candidates: readonly string[], now: number): void {
    if (!isCanonicalUuid(leaseUuid)) return;
    const sorted = JSON.stringify([...new Set(candidates)].sort());
    this.#stmt.upsertPlacement.run(uuidBytes(leaseUuid), "conflict", null, null, sorted, now);
  }

  /**
   * The reconciler's placement pruning: the lease ended on chain (exact re-read) and no
   * backend reports it any more. Leases with an attempt keep their record, and so does a
   * retained lease (only its owner's /retentions can retire it).
   */
  prunePlacement(leaseUuid: string): boolean {
    if (!isCanonicalUuid(leaseUuid)) return false;
    return this.#atomic(() => {
      if (this.#stmt.attemptByLease.get(uuidBytes(leaseUuid)) !== undefined) return false;
      if (this.retained.get(leaseUuid) !== undefined) return false;
      return this.#stmt.deletePlacement.run(uuidBytes(leaseUuid)).changes === 1;
    });
  }

  /**
   * The lease ended on chain and `backend` accepted its deprovision: an attempt at that
   * backend can no longer take effect, so it is removed. An attempt at any other backend
   * stays (that backend has promised nothing). Returns whether a row was removed.
   */
  retireAttempt(leaseUuid: string, backend: string): boolean {
    if (!isCanonicalUuid(leaseUuid)) return false;
    return this.#atomic(() => {
      const row = this.#stmt.attemptByLease.get(uuidBytes(leaseUuid));
      if (row?.backend !== backend) return false;
      this.retained.attemptEnded(row.lease_uuid, row.kind, "handed-back");
      return this.#stmt.deleteAttempt.run(row.lease_uuid).changes === 1;
    });
  }

  #exactAttempt(leaseUuid: string, operationId: string): AttemptRow | undefined {
    if (!isCanonicalUuid(leaseUuid) || !isUuidV4(operationId)) return undefined;
    const row = this.#stmt.attemptByLease.get(uuidBytes(leaseUuid));
    return row?.operation_id.equals(uuidBytes(operationId)) ? row : undefined;
  }

  /**
   * A backend's complete inventory positively reports these leases. Attempts at that
   * backend are confirmed; a report contradicting another owner or attempt becomes a
   * durable conflict. Leases it does not report are not touched (silence proves nothing).
   */
  applyPositiveInventory(backend: string, leaseUuids: readonly string[], now: number): InventoryOutcome {
    const out: InventoryOutcome = { confirmed: [], conflicts: [], unrecorded: [] };
    this.#atomic(() => {
      for (const lease of leaseUuids) {
        if (!isCanonicalUuid(lease)) continue;
        const attemptRow = this.#stmt.attemptByLease.get(uuidBytes(lease));
        const existing = this.placement(lease);
        if (attemptRow === undefined && existing === undefined) {
          out.unrecorded.push(lease);
          continue;
        }
        if (attemptRow !== undefined && attemptRow.backend === backend) {
          this.#stmt.deleteAttempt.run(attemptRow.lease_uuid);
          this.retained.attemptEnded(attemptRow.lease_uuid, attemptRow.kind, "committed");
        }
        const candidates = new Set<string>([backend]);
        if (attemptRow !== undefined && attemptRow.backend !== backend) candidates.add(attemptRow.backend);
        const confirmedBy = attemptRow?.backend === backend ? uuidText(attemptRow.operation_id) : undefined;
        const result = this.#claim(lease, backend, now, confirmedBy, candidates);
        (result.state === "confirmed" ? out.confirmed : out.conflicts).push(lease);
      }
    });
    return out;
  }

  #claim(
    lease: string,
    backend: string,
    now: number,
    operationId: string | undefined,
    extra: Set<string> = new Set([backend]),
  ): Placement {
    const existing = this.placement(lease);
    const candidates = new Set<string>(extra);
    if (existing?.owner !== undefined) candidates.add(existing.owner);
    for (const c of existing?.candidates ?? []) candidates.add(c);
    // A report without an operation id keeps the id the same owner was confirmed by.
    const lifecycleId = operationId ?? (existing?.owner === backend ? existing.lifecycleId : undefined);
    const next: Placement =
      candidates.size === 1 && existing?.state !== "conflict"
        ? {
            leaseUuid: lease,
            state: "confirmed",
            owner: backend,
            lifecycleId,
            candidates: [],
            updatedAt: now,
          }
        : {
            leaseUuid: lease,
            state: "conflict",
            owner: undefined,
            lifecycleId: undefined,
            candidates: [...candidates].sort(),
            updatedAt: now,
          };
    if (
      existing !== undefined &&
      existing.state === next.state &&
      existing.owner === next.owner &&
      existing.lifecycleId === next.lifecycleId &&
      JSON.stringify(existing.candidates) === JSON.stringify(next.candidates)
    ) {
      return existing;
    }
    this.#stmt.upsertPlacement.run(
      uuidBytes(lease),
      next.state,
      next.owner ?? null,
      next.lifecycleId === undefined ? null : uuidBytes(next.lifecycleId),
      JSON.stringify(next.candidates),
      now,
    );
    return next;
  }

  placement(leaseUuid: string): Placement | undefined {
    if (!isCanonicalUuid(leaseUuid)) return undefined;
    const row = this.#stmt.placement.get(uuidBytes(leaseUuid));
    return row === undefined ? undefined : toPlacement(row);
  }

  attemptFor(leaseUuid: string): Attempt | undefined {
    if (!isCanonicalUuid(leaseUuid)) return undefined;
    const row = this.#stmt.attemptByLease.get(uuidBytes(leaseUuid));
    return row === undefined ? undefined : toAttempt(row);
  }

  /**
   * Whether the lease has an unresolved attempt (attemptFor without building the record).
   * GET status asks on every poll: answered from memory until the attempts table changes.
   */
  hasAttempt(leaseUuid: string): boolean {
    if (!isCanonicalUuid(leaseUuid)) return false;
    return this.#attempts.get(leaseUuid, this.#readHasAttempt);
  }

  readonly #readHasAttempt = (leaseUuid: string): boolean =>
    this.#stmt.hasAttempt.get(uuidBytes(leaseUuid)) !== undefined;

  /** Unresolved attempts created at or before `cutoff` (the overdue ones), oldest first. */
  attemptsCreatedBy(cutoff: number): Attempt[] {
    return this.#stmt.attemptsCreatedBy.all(cutoff).map(toAttempt);
  }

  unresolvedAttempts(): Attempt[] {
    return this.#stmt.attempts.all().map(toAttempt);
  }

  placements(): Placement[] {
    return this.#stmt.placements.all().map(toPlacement);
  }

  /** Every placement in lease order, one row at a time and none kept (the reconciler's sweep). */
  eachPlacement(visit: (row: PlacementTuple) => void): void {
    for (const row of this.#stmt.placementTuples.iterate()) visit(row);
  }

  counts(): { placements: number; conflicts: number; attempts: number } {
    return { ...this.#stmt.counts.get()! };
  }
}
