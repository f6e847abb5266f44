import type Database from "better-sqlite3";
import { RETENTION_MISSES_TO_RETIRE } from "../../core/reconcile/index.ts";
import { isCanonicalUuid, uuidBytes, uuidText } from "../../core/uuid.ts";

/**
 * The retained side of the placement rows (migration 4). A confirmed placement whose owner
 * reported the lease's data soft-deleted on close is *retained*: it keeps owner and storage
 * identity, placement pruning never removes it, and a restore is routed by it. It is
 * retired only by the owner's positive word: its identity-checked /retentions no longer
 * listing the lease on `RETENTION_MISSES_TO_RETIRE` (core/reconcile) consecutive complete sweeps, or a
 * restore of its data settling successfully. A restore that fails or is refused hands the
 * data back: the row simply stays retained.
 */
export interface RetainedRecord {
  leaseUuid: string;
  owner: string;
  /** The owner's pinned storage identity when the retention was reported. */
  storageId: string;
  retainedAt: number;
  /** Consecutive complete sweeps whose /retentions of the owner did not list the lease. */
  misses: number;
  /** The lease an admitted, unsettled restore adopts this data into. */
  restoreTarget: string | undefined;
}

/** How an attempt ended, as far as a restore whose target it was is concerned. */
export type AttemptEnd = "committed" | "handed-back";

interface RetainedRow {
  lease_uuid: Buffer;
  owner: string;
  retained_storage_id: string;
  retained_at: number;
  retention_misses: number;
  restore_target: Buffer | null;
}

const COLUMNS = "lease_uuid, owner, retained_storage_id, retained_at, retention_misses, restore_target";
const RETAINED = "state = 'confirmed' AND retained_at IS NOT NULL";

function toRecord(r: RetainedRow): RetainedRecord {
  return {
    leaseUuid: uuidText(r.lease_uuid),
    owner: r.owner,
    storageId: r.retained_storage_id,
    retainedAt: r.retained_at,
    misses: r.retention_misses,
    restoreTarget: r.restore_target === null ? undefined : uuidText(r.restore_target),
  };
}

function prepare(db: Database.Database) {
  return {
    mark: db.prepare<[number, string, Buffer, string]>(
      `UPDATE placements SET retained_at = ?, retained_storage_id = ?, retention_misses = 0
       WHERE lease_uuid = ? AND state = 'confirmed' AND owner = ?`,
    ),
    one: db.prepare<[Buffer], RetainedRow>(
      `SELECT ${COLUMNS} FROM placements WHERE lease_uuid = ? AND ${RETAINED}`,
    ),
    all: db.prepare<[], RetainedRow>(
      `SELECT ${COLUMNS} FROM placements WHERE ${RETAINED} ORDER BY lease_uuid`,
    ),
    miss: db.prepare<[Buffer]>(
      `UPDATE placements SET retention_misses = retention_misses + 1 WHERE lease_uuid = ? AND ${RETAINED}`,
    ),
    seen: db.prepare<[Buffer]>(
      `UPDATE placements SET retention_misses = 0 WHERE lease_uuid = ? AND ${RETAINED} AND retention_misses > 0`,
    ),
    retire: db.prepare<[Buffer, string, number]>(
      `DELETE FROM placements WHERE lease_uuid = ? AND ${RETAINED} AND owner = ?
         AND restore_target IS NULL AND retention_misses >= ?`,
    ),
    claim: db.prepare<[Buffer, Buffer, string]>(
      `UPDATE placements SET restore_target = ?
       WHERE lease_uuid = ? AND ${RETAINED} AND owner = ? AND restore_target IS NULL`,
    ),
    sourceOf: db.prepare<[Buffer], RetainedRow>(`SELECT ${COLUMNS} FROM placements WHERE restore_target = ?`),
    release: db.prepare<[Buffer]>("UPDATE placements SET restore_target = NULL WHERE restore_target = ?"),
    deleteSource: db.prepare<[Buffer]>("DELETE FROM placements WHERE restore_target = ?"),
  };
}

export class RetainedRows {
  readonly #stmt: ReturnType<typeof prepare>;

  constructor(db: Database.Database) {
    this.#stmt = prepare(db);
  }

  /** The owner `backend` reported the lease's data retained; false unless it is the confirmed owner. */
  mark(leaseUuid: string, backend: string, storageId: string, now: number): boolean {
    if (!isCanonicalUuid(leaseUuid)) return false;
    return this.#stmt.mark.run(now, storageId, uuidBytes(leaseUuid), backend).changes === 1;
  }

  get(leaseUuid: string): RetainedRecord | undefined {
    if (!isCanonicalUuid(leaseUuid)) return undefined;
    const row = this.#stmt.one.get(uuidBytes(leaseUuid));
    return row === undefined ? undefined : toRecord(row);
  }

  all(): RetainedRecord[] {
    return this.#stmt.all.all().map(toRecord);
  }

  /** A complete sweep: the owner's /retentions listed the lease (true) or did not. */
  sweepSaw(leaseUuid: string, listed: boolean): void {
    if (!isCanonicalUuid(leaseUuid)) return;
    (listed ? this.#stmt.seen : this.#stmt.miss).run(uuidBytes(leaseUuid));
  }

  /**
   * Retires the row once it has missed enough complete sweeps of `owner`, and no restore of
   * it is in flight. Returns whether it was removed.
   */
  retireMissing(leaseUuid: string, owner: string): boolean {
    if (!isCanonicalUuid(leaseUuid)) return false;
    return this.#stmt.retire.run(uuidBytes(leaseUuid), owner, RETENTION_MISSES_TO_RETIRE).changes === 1;
  }

  /** Claims the retained `source` for a restore into `target` at `owner`; false when it cannot. */
  claimForRestore(source: string, target: string, owner: string): boolean {
    return this.#stmt.claim.run(uuidBytes(target), uuidBytes(source), owner).changes === 1;
  }

  /** The retained record an unsettled restore into `target` adopts. */
  sourceOf(target: string): RetainedRecord | undefined {
    if (!isCanonicalUuid(target)) return undefined;
    const row = this.#stmt.sourceOf.get(uuidBytes(target));
    return row === undefined ? undefined : toRecord(row);
  }

  /**
   * The attempt of `target` is gone. A committed restore retires its source (the data now
   * belongs to the target); any other end hands the data back to the source row.
   */
  attemptEnded(target: Buffer, kind: string, end: AttemptEnd): void {
    if (kind !== "restore") return;
    (end === "committed" ? this.#stmt.deleteSource : this.#stmt.release).run(target);
  }
}
