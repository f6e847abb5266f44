// Over 500 lines: placements, attempts, the backend fleet and copy attestation over one database; splitting them is an open step of issue #29.
import type Database from "better-sqlite3";
import type { Statement } from "better-sqlite3";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid, isUuidV4 } from "../../core/uuid.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import { ExistsMemo } from "./exists-memo.ts";
import { PLACEMENT_MIGRATIONS } from "./placement-schema.ts";
import { RetainedRows } from "./retained-rows.ts";
import { openStore } from "./sqlite.ts";
import { uuidBytes, uuidText } from "./uuid-bytes.ts";

/**
 * providerd's authority on *where* each lease was placed. Bound to one provider UUID.
 * The safety rule: an attempt row is committed before any backend call and disappears
 * only on positive evidence (the exact operation's callback, a positive inventory
 * report) or a definite synchronous refusal. Nothing here ever infers from absence.
 *
 * Commits do not wait for the disk: a caller about to act on a write outside the process
 * (call a backend, answer a callback, send a chain tx) first awaits `durable()`, and one
 * fsync on the thread pool serves every commit made before it (see WalDurability).
 */
export type AttemptKind = "provision" | "restore";

export interface Attempt {
  leaseUuid: string;
  backend: string;
  operationId: string;
  kind: AttemptKind;
  createdAt: number;
}

export interface Placement {
  leaseUuid: string;
  state: "confirmed" | "conflict";
  owner: string | undefined;
  /** The operation id that confirmed the owner: lifecycle callbacks must carry it. */
  lifecycleId: string | undefined;
  /** For a conflict: every backend that claimed the lease. */
  candidates: string[];
  updatedAt: number;
}

/**
 * One placement row as the reconciler's sweep reads every one of them: lease UUID (canonical
 * text), state, owner (null for a conflict), candidates (JSON text), updated_at, and 1 when
 * the row has no lifecycle id (else 0).
 */
export type PlacementTuple = [
  leaseUuid: string,
  state: Placement["state"],
  owner: string | null,
  candidates: string,
  updatedAt: number,
  noLifecycle: 0 | 1,
];

export interface InventoryBaseline {
  provisions: number;
  retentions: number;
  at: number;
}

export interface BackendPin {
  name: string;
  storageId: string;
  pinnedAt: number;
  /** Set when an operator retired the backend as lost (`retire-backend --lost`). */
  lostAt: number | undefined;
  baseline: InventoryBaseline | undefined;
}

export type RecordResult = "recorded" | "lease-busy";

export type SettleResult =
  | { kind: "unknown-operation" }
  | { kind: "settled"; attempt: Attempt; placement: Placement | undefined };

export interface InventoryOutcome {
  confirmed: string[];
  conflicts: string[];
  /** Leases the backend reports that we have no record of (the reconciler decides). */
  unrecorded: string[];
}

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

export interface NewBackendPin {
  name: string;
  storageId: string;
  baseline: Omit<InventoryBaseline, "at">;
}

interface BackendRow {
  name: string;
  storage_id: string;
  pinned_at: number;
  baseline_at: number | null;
  baseline_provisions: number | null;
  baseline_retentions: number | null;
  lost_at: number | null;
}

const META_PROVIDER = "SELECT value FROM store_meta WHERE key = 'provider_uuid'";

/**
 * Every statement the store runs, typed and prepared once per connection. The two that
 * write the attempts table tell `attempts` first (the memo `hasAttempt` answers from).
 */
function prepare(db: Database.Database, attempts: ExistsMemo) {
  const writesAttempts = <P extends unknown[]>(statement: Statement<P>) => ({
    run(...params: P): Database.RunResult {
      attempts.changed();
      return statement.run(...params);
    },
  });
  return {
    insertAttempt: writesAttempts(
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
    deleteAttempt: writesAttempts(db.prepare<[Buffer]>("DELETE FROM attempts WHERE lease_uuid = ?")),
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
    backends: db.prepare<[], BackendRow>("SELECT * FROM backends ORDER BY name"),
    insertBackend: db.prepare<[string, string, number, number, number, number]>(
      `INSERT INTO backends (name, storage_id, pinned_at, baseline_at, baseline_provisions, baseline_retentions)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    recordBaseline: db.prepare<[number, number, number, string]>(
      "UPDATE backends SET baseline_at = ?, baseline_provisions = ?, baseline_retentions = ? WHERE name = ?",
    ),
    // Read on every /metrics scrape: one statement, one pass over each table.
    counts: db.prepare<[], { placements: number; conflicts: number; attempts: number }>(
      `SELECT (SELECT count(*) FROM placements WHERE state = 'confirmed') AS placements,
              (SELECT count(*) FROM placements WHERE state = 'conflict') AS conflicts,
              (SELECT count(*) FROM attempts) AS attempts`,
    ),
    providerUuid: db.prepare<[], string>(META_PROVIDER).pluck(),
    meta: db.prepare<[string], string>("SELECT value FROM store_meta WHERE key = ?").pluck(),
  };
}

export class PlacementStore {
  readonly #database: SqliteDatabase;
  readonly #db: Database.Database;
  readonly providerUuid: string;
  readonly #stmt: ReturnType<typeof prepare>;
  /** Pinned backend names; pins change only through create() and addBackend(). */
  readonly #backendNames: Set<string>;
  /** Backends retired as lost; changed only offline (retire-backend), so read once. */
  readonly #lost: Set<string>;
  /** One transaction wrapper, built once (better-sqlite3 wrappers are not free to create). */
  readonly #tx: (work: () => unknown) => unknown;
  /** The retained side of the placement rows (retention and restore). */
  readonly retained: RetainedRows;
  /** `hasAttempt`'s answers, forgotten by every write of the attempts table. */
  readonly #attempts: ExistsMemo;

  private constructor(database: SqliteDatabase, providerUuid: string) {
    this.#database = database;
    this.#db = database.db;
    this.#tx = this.#db.transaction((work: () => unknown) => work());
    this.providerUuid = providerUuid;
    this.#attempts = new ExistsMemo(this.#db);
    this.#stmt = prepare(this.#db, this.#attempts);
    this.retained = new RetainedRows(this.#db);
    const pins = this.#stmt.backends.all();
    this.#backendNames = new Set(pins.map((b) => b.name));
    this.#lost = new Set(pins.filter((b) => b.lost_at !== null).map((b) => b.name));
  }

  /**
   * Creates a fresh store (used only by `fred placement init`): the file must not exist.
   * Pins each backend's storage identity and records its empty-inventory baseline.
   */
  static create(
    path: string,
    providerUuid: string,
    backends: readonly NewBackendPin[],
    now: number,
  ): PlacementStore {
    if (!isCanonicalUuid(providerUuid)) {
      throw new FredError("ERR_PLACEMENT_PROVIDER", "provider UUID must be canonical");
    }
    for (const b of backends) {
      if (!isUuidV4(b.storageId)) {
        throw new FredError(
          "ERR_PLACEMENT_STORAGE_ID",
          `backend ${b.name}: storage ID must be a canonical UUIDv4`,
        );
      }
    }
    const database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "must-not-exist",
      durability: "group-commit",
    });
    const db = database.db;
    try {
      db.transaction(() => {
        db.prepare("INSERT INTO store_meta (key, value) VALUES ('provider_uuid', ?)").run(providerUuid);
        const pin = db.prepare(
          `INSERT INTO backends (name, storage_id, pinned_at, baseline_at, baseline_provisions, baseline_retentions)
           VALUES (?, ?, ?, ?, ?, ?)`,
        );
        for (const b of backends)
          pin.run(b.name, b.storageId, now, now, b.baseline.provisions, b.baseline.retentions);
      })();
      database.committed();
    } catch (err) {
      database.close();
      throw err;
    }
    return new PlacementStore(database, providerUuid);
  }

  /**
   * Opens an existing store; never creates one. Refuses another provider's file.
   * `readonly` reads beside a running providerd (inspection, tests): nothing is
   * migrated, written or checkpointed, and any write throws.
   */
  static open(
    path: string,
    providerUuid: string,
    opts: { readonly?: boolean; restoredCopy?: "refuse" | "allow" } = {},
  ): PlacementStore {
    const readonly = opts.readonly ?? false;
    const database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "never",
      durability: "group-commit",
      readonly,
    });
    try {
      const store = new PlacementStore(database, providerUuid);
      const bound = store.#stmt.providerUuid.get();
      if (bound !== providerUuid) {
        throw new FredError(
          "ERR_PLACEMENT_PROVIDER",
          `placement store ${path} belongs to provider ${bound ?? "(none)"}, not ${providerUuid}`,
        );
      }
      const copiedAt = store.copyTakenAt();
      if (!readonly && copiedAt !== undefined && opts.restoredCopy !== "allow") {
        throw new FredError(
          "ERR_PLACEMENT_RESTORED",
          `placement store ${path} is a copy taken at ${new Date(copiedAt).toISOString()} (a restored backup or snapshot); ` +
            "leases placed after it are unrecorded, so attest it first: fred placement repair --config <file> --attest-restored-backup --apply",
        );
      }
      return store;
    } catch (err) {
      database.close();
      throw err;
    }
  }

  /**
   * The connection, for modules that keep their own tables in this file (the maintenance
   * journal): their writes join `batch()` transactions and `durable()` covers them.
   */
  get db(): Database.Database {
    return this.#db;
  }

  /**
   * Opens a snapshot or backup file read-only, whichever provider it is bound to
   * (`fred placement inspect --file`).
   */
  static openCopy(path: string): PlacementStore {
    const database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "never",
      durability: "group-commit",
      readonly: true,
    });
    try {
      const bound = database.db.prepare<[], string>(META_PROVIDER).pluck().get();
      return new PlacementStore(database, bound ?? "");
    } catch (err) {
      database.close();
      throw err;
    }
  }

  /**
   * Marks a fresh copy of a store (written by the online backup API) as a copy: a store
   * restored from it refuses to open read-write until an operator attests it, because it
   * cannot know of leases placed after the copy was taken.
   */
  static markCopy(path: string, takenAt: number): void {
    using database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "never",
      durability: "full",
    });
    database.db
      .prepare("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('copy_taken_at', ?)")
      .run(String(takenAt));
  }

  /** When this store's file was copied from a live store (undefined: the original). */
  copyTakenAt(): number | undefined {
    const v = this.#stmt.meta.get("copy_taken_at");
    return v === undefined ? undefined : Number(v);
  }

  /**
   * `--attest-restored-backup`: the operator vouches that this restored copy is the
   * newest there is. The copy mark goes, and every inventory baseline is cleared, so
   * readiness waits for a fresh complete sweep (which also adopts leases the copy missed,
   * by the usual located-on-exactly-one-backend proof).
   */
  attestRestored(now: number): { copy_taken_at: number } {
    const copiedAt = this.copyTakenAt();
    if (copiedAt === undefined) {
      throw new FredError(
        "ERR_PLACEMENT_RESTORED",
        "this placement store is not a restored copy; nothing to attest",
      );
    }
    this.#atomic(() => {
      this.#db.prepare("DELETE FROM store_meta WHERE key = 'copy_taken_at'").run();
      this.#db
        .prepare("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('restore_attested_at', ?)")
        .run(String(now));
      this.#db
        .prepare(
          "UPDATE backends SET baseline_at = NULL, baseline_provisions = NULL, baseline_retentions = NULL",
        )
        .run();
    });
    this.#database.committed();
    return { copy_taken_at: copiedAt };
  }

  /** Syncs and checkpoints the WAL (a writer), then closes. */
  close(): void {
    this.#database.close();
  }

  /** Resolves once every commit made so far is on stable storage. */
  durable(): Promise<void> {
    // Conservatively count a commit: callers ask right after their writes.
    this.#database.committed();
    return this.#database.durable();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Commits a batch of attempts in ONE transaction (group commit); await `durable()`
   * before calling any backend. A lease that already has an unresolved attempt is left
   * untouched.
   */
  recordAttempts(attempts: readonly Attempt[]): RecordResult[] {
    for (const a of attempts) this.#checkAttempt(a);
    return this.#atomic(() =>
      attempts.map((a): RecordResult => {
        const r = this.#stmt.insertAttempt.run(
          uuidBytes(a.operationId),
          uuidBytes(a.leaseUuid),
          a.backend,
          a.kind,
          a.createdAt,
        );
        return r.changes === 1 ? "recorded" : "lease-busy";
      }),
    );
  }

  recordAttempt(attempt: Attempt): RecordResult {
    return this.recordAttempts([attempt])[0]!;
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
    if (!this.#backendNames.has(a.backend)) {
      throw new FredError(
        "ERR_PLACEMENT_UNKNOWN_BACKEND",
        `backend ${a.backend} is not pinned in the placement store`,
      );
    }
  }

  /**
   * Applies the exact operation's callback (lease from the body, operation id from the
   * authenticated URL). `success` confirms the attempted backend as owner (or records a
   * conflict when another backend already owns the lease); `failed` clears the attempt.
   * An unknown, stale or already settled id changes nothing.
   */
  settleOperation(
    leaseUuid: string,
    operationId: string,
    outcome: "success" | "failed",
    now: number,
  ): SettleResult {
    return this.#atomic((): SettleResult => {
      const row = this.#exactAttempt(leaseUuid, operationId);
      if (row === undefined) return { kind: "unknown-operation" };
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
          : this.placement(attempt.leaseUuid);
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
   * Runs `fn` in one transaction; store calls inside it join it (no savepoint each): if
   * `fn` throws, the whole batch rolls back. Lets callers commit many independent updates
   * at once.
   */
  batch<T>(fn: () => T): T {
    return this.#tx(fn) as T;
  }

  /** `fn` atomically: its own transaction, or part of the caller's batch. */
  #atomic<T>(fn: () => T): T {
    return this.#db.inTransaction ? fn() : (this.#tx(fn) as T);
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
    return this.#attempts.has(leaseUuid, this.#readHasAttempt);
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

  backends(): BackendPin[] {
    return this.#stmt.backends.all().map((r) => ({
      name: r.name,
      storageId: r.storage_id,
      pinnedAt: r.pinned_at,
      lostAt: r.lost_at ?? undefined,
      baseline:
        r.baseline_at === null
          ? undefined
          : {
              at: r.baseline_at,
              provisions: r.baseline_provisions ?? 0,
              retentions: r.baseline_retentions ?? 0,
            },
    }));
  }

  /** The pinned storage ID per backend name. */
  pins(): Map<string, string> {
    return new Map(this.backends().map((b) => [b.name, b.storageId]));
  }

  /**
   * Pins one more backend (`fred placement add-backend`, providerd stopped): its storage
   * identity and the complete inventory baseline it answered with. A name or storage ID
   * the store already knows is refused: a pin is never replaced.
   */
  addBackend(pin: NewBackendPin, now: number): void {
    if (!isUuidV4(pin.storageId)) {
      throw new FredError(
        "ERR_PLACEMENT_STORAGE_ID",
        `backend ${pin.name}: storage ID must be a canonical UUIDv4`,
      );
    }
    const known = this.backends().find((b) => b.name === pin.name || b.storageId === pin.storageId);
    if (known !== undefined) {
      throw new FredError(
        "ERR_PLACEMENT_STORAGE_ID",
        `backend ${known.name} is already pinned (storage ID ${known.storageId}); a pin is never replaced`,
      );
    }
    this.#stmt.insertBackend.run(
      pin.name,
      pin.storageId,
      now,
      now,
      pin.baseline.provisions,
      pin.baseline.retentions,
    );
    this.#database.committed();
    this.#backendNames.add(pin.name);
  }

  /** The underlying database, for the online backup API (snapshots and pre-change backups). */
  get database(): SqliteDatabase {
    return this.#database;
  }

  /** Records a complete inventory projection for one backend. */
  recordBaseline(backend: string, counts: Omit<InventoryBaseline, "at">, now: number): void {
    const r = this.#stmt.recordBaseline.run(now, counts.provisions, counts.retentions, backend);
    if (r.changes !== 1)
      throw new FredError("ERR_PLACEMENT_UNKNOWN_BACKEND", `backend ${backend} is not pinned`);
  }

  /** Whether `backend` was retired as lost (its leases' reads answer 410). */
  isLost(backend: string): boolean {
    return this.#lost.has(backend);
  }

  /** Whether any backend was retired as lost: when none was, no lease's record can name one. */
  get anyLost(): boolean {
    return this.#lost.size > 0;
  }

  /**
   * `retire-backend --lost`: the backend's storage is gone for good. Its pin stays while
   * rows name it (they are pruned once their leases ended); nothing is routed to it.
   */
  markLost(backend: string, now: number): void {
    const r = this.#db
      .prepare("UPDATE backends SET lost_at = ? WHERE name = ? AND lost_at IS NULL")
      .run(now, backend);
    if (r.changes === 1) this.#database.committed();
    this.#lost.add(backend);
  }

  /**
   * Forgets a retired backend's pin. Only a backend no row names any more: the foreign
   * keys refuse the delete otherwise, so a live lease never loses its owner this way.
   */
  removeBackend(backend: string): void {
    const named =
      this.placements().some((p) => p.owner === backend || p.candidates.includes(backend)) ||
      this.unresolvedAttempts().some((a) => a.backend === backend);
    if (named) {
      throw new FredError(
        "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
        `backend ${backend} is still named by placement rows`,
      );
    }
    this.#db.prepare("DELETE FROM backends WHERE name = ?").run(backend);
    this.#database.committed();
    this.#backendNames.delete(backend);
    this.#lost.delete(backend);
  }

  /**
   * True when every configured backend (and no other) is pinned with a baseline. A
   * backend retired as lost is not part of the topology any more, whether listed or not.
   */
  baselineMatches(configured: readonly string[]): boolean {
    const pinned = this.backends().filter((b) => b.lostAt === undefined);
    const names = new Set(configured);
    return pinned.length === names.size && pinned.every((b) => names.has(b.name) && b.baseline !== undefined);
  }

  counts(): { placements: number; conflicts: number; attempts: number } {
    return { ...this.#stmt.counts.get()! };
  }
}
