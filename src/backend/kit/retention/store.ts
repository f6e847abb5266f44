import type Database from "better-sqlite3";
import type { Journal, LeaseRecord } from "../journal/journal.ts";
import type { InstanceSpec, LeaseItem, RetainedVolume } from "../substrate.ts";

/**
 * The retention rows (journal migration 5), one per closed lease whose data is kept.
 * Every transition is a compare-and-swap on `generation` inside the journal's
 * transaction, so a stale reader (a reaper sweep, a restore worker from before a crash)
 * can never move a row another path has moved since.
 *
 *   closing ──retained──► active ──claim──► restoring ──commit──► reaping ──► (deleted)
 *      │                   │  ▲                 │
 *      └─refused─► (deleted)  └────hand back────┘      active ──expired/evicted──► reaping
 */
export type RetentionStatus = "closing" | "active" | "restoring" | "reaping";
export type ReapReason = "expired" | "evicted" | "restored" | "refused";

export interface RetentionRow {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  partition: string;
  items: LeaseItem[];
  instances: InstanceSpec[];
  payload: Buffer | undefined;
  payloadHash: string | undefined;
  image: string;
  status: RetentionStatus;
  volumes: RetainedVolume[];
  retainedMb: number;
  fsIdentity: string | undefined;
  closedAtMs: number;
  retainedAtMs: number | undefined;
  destLease: string | undefined;
  destOperation: string | undefined;
  reapReason: ReapReason | undefined;
  orphanMisses: number;
  discardLease: string | undefined;
  generation: number;
}

type Row = Record<string, unknown>;

function toRow(r: Row): RetentionRow {
  const opt = <T>(v: unknown) => (v === null ? undefined : (v as T));
  return {
    leaseUuid: r.lease_uuid as string,
    tenant: r.tenant as string,
    providerUuid: r.provider_uuid as string,
    partition: r.partition as string,
    items: JSON.parse(r.items as string) as LeaseItem[],
    instances: JSON.parse(r.instances as string) as InstanceSpec[],
    payload: opt<Buffer>(r.payload),
    payloadHash: opt<string>(r.payload_hash),
    image: r.image as string,
    status: r.status as RetentionStatus,
    volumes: JSON.parse(r.volumes as string) as RetainedVolume[],
    retainedMb: r.retained_mb as number,
    fsIdentity: opt<string>(r.fs_identity),
    closedAtMs: r.closed_at as number,
    retainedAtMs: opt<number>(r.retained_at),
    destLease: opt<string>(r.dest_lease),
    destOperation: opt<string>(r.dest_operation),
    reapReason: opt<ReapReason>(r.reap_reason),
    orphanMisses: r.orphan_misses as number,
    discardLease: opt<string>(r.discard_lease),
    generation: r.generation as number,
  };
}

/** Whole MiB a set of retained volumes occupies, rounded up (what caps and the pool count). */
export function retainedMbOf(volumes: readonly RetainedVolume[]): number {
  const bytes = volumes.reduce((n, v) => n + v.bytes, 0);
  return Math.ceil(bytes / (1024 * 1024));
}

export class RetentionStore {
  readonly #journal: Journal;
  readonly #statements: ReturnType<typeof prepare>;

  constructor(journal: Journal) {
    this.#journal = journal;
    this.#statements = prepare(journal.db);
  }

  /** Runs `fn` in the journal's transaction (joining one already open). */
  tx<T>(fn: () => T): T {
    return this.#journal.transaction(fn);
  }

  get(leaseUuid: string): RetentionRow | undefined {
    const r = this.#statements.get.get(leaseUuid) as Row | undefined;
    return r === undefined ? undefined : toRow(r);
  }

  /** The source row a restore destination claimed, while the restore is unresolved. */
  restoringInto(destLease: string): RetentionRow | undefined {
    const r = this.#statements.byDest.get(destLease) as Row | undefined;
    if (r === undefined) return undefined;
    const row = toRow(r);
    return row.status === "restoring" ? row : undefined;
  }

  /** Whether `lease` is the last failed destination of a restore whose copy must be discarded. */
  isDiscarded(lease: string): boolean {
    return this.#statements.byDiscard.get(lease) !== undefined;
  }

  all(): RetentionRow[] {
    return (this.#statements.all.all() as Row[]).map(toRow);
  }

  withStatus(status: RetentionStatus): RetentionRow[] {
    return (this.#statements.withStatus.all(status) as Row[]).map(toRow);
  }

  /** Restorable rows (active, restoring) in UUID order after `after`, at most `limit` (-1: all). */
  listed(after: string, limit: number): RetentionRow[] {
    return (this.#statements.listed.all(after, limit) as Row[]).map(toRow);
  }

  /** The close decided to retain: a `closing` row, filled from the lease (idempotent). */
  insertClosing(lease: LeaseRecord, partition: string, nowMs: number): void {
    this.#statements.insertClosing.run({
      lease_uuid: lease.leaseUuid,
      tenant: lease.tenant,
      provider_uuid: lease.providerUuid,
      partition,
      items: JSON.stringify(lease.items),
      instances: JSON.stringify(lease.instances),
      payload: lease.payload ?? null,
      payload_hash: lease.payloadHash ?? null,
      image: lease.image,
      closed_at: nowMs,
    });
  }

  /** closing → active, with what the substrate measured; false if the row moved. */
  activate(
    row: RetentionRow,
    partition: string,
    volumes: readonly RetainedVolume[],
    fsIdentity: string | undefined,
    nowMs: number,
  ): boolean {
    return (
      this.#statements.activate.run(
        partition,
        JSON.stringify(volumes),
        retainedMbOf(volumes),
        fsIdentity ?? null,
        nowMs,
        row.leaseUuid,
        row.generation,
      ).changes === 1
    );
  }

  /** active → restoring for `destLease`'s operation; false if the row moved. */
  claim(row: RetentionRow, destLease: string, destOperation: string): boolean {
    return this.#statements.claim.run(destLease, destOperation, row.leaseUuid, row.generation).changes === 1;
  }

  /** restoring → active: a restore that did not commit gives the data back to the source. */
  handBack(row: RetentionRow): boolean {
    return this.#statements.handBack.run(row.destLease ?? null, row.leaseUuid, row.generation).changes === 1;
  }

  /** active|restoring → reaping (the bytes are still on disk until `remove`). */
  reap(row: RetentionRow, reason: ReapReason): boolean {
    return this.#statements.reap.run(reason, row.leaseUuid, row.generation).changes === 1;
  }

  /** One more sweep found every volume of the row missing; returns the new count (undefined: moved). */
  missed(row: RetentionRow): number | undefined {
    if (this.#statements.missed.run(row.leaseUuid, row.generation).changes !== 1) return undefined;
    return row.orphanMisses + 1;
  }

  /** A sweep found the row's volumes again: the consecutive count starts over. */
  resetMisses(row: RetentionRow): void {
    this.#statements.resetMisses.run(row.leaseUuid, row.generation);
  }

  /** Deletes exactly this generation of the row. */
  remove(row: RetentionRow): boolean {
    return this.#statements.remove.run(row.leaseUuid, row.generation).changes === 1;
  }

  /** The failed destination's copy is gone: nothing left to discard. */
  clearDiscard(lease: string): void {
    this.#statements.clearDiscard.run(lease);
  }
}

function prepare(db: Database.Database) {
  const next = "generation = generation + 1";
  return {
    get: db.prepare("SELECT * FROM retentions WHERE lease_uuid = ?"),
    byDest: db.prepare("SELECT * FROM retentions WHERE dest_lease = ?"),
    byDiscard: db.prepare("SELECT 1 FROM retentions WHERE discard_lease = ? LIMIT 1"),
    all: db.prepare("SELECT * FROM retentions ORDER BY lease_uuid"),
    withStatus: db.prepare("SELECT * FROM retentions WHERE status = ? ORDER BY lease_uuid"),
    listed: db.prepare(
      "SELECT * FROM retentions WHERE status IN ('active', 'restoring') AND lease_uuid > ? ORDER BY lease_uuid LIMIT ?",
    ),
    insertClosing: db.prepare(`
      INSERT OR IGNORE INTO retentions (lease_uuid, tenant, provider_uuid, partition, items, instances, payload,
        payload_hash, image, status, closed_at)
      VALUES (@lease_uuid, @tenant, @provider_uuid, @partition, @items, @instances, @payload, @payload_hash,
        @image, 'closing', @closed_at)`),
    activate: db.prepare(
      `UPDATE retentions SET status = 'active', partition = ?, volumes = ?, retained_mb = ?, fs_identity = ?,
        retained_at = ?, ${next} WHERE lease_uuid = ? AND generation = ? AND status = 'closing'`,
    ),
    claim: db.prepare(
      `UPDATE retentions SET status = 'restoring', dest_lease = ?, dest_operation = ?, ${next}
        WHERE lease_uuid = ? AND generation = ? AND status = 'active'`,
    ),
    handBack: db.prepare(
      `UPDATE retentions SET status = 'active', discard_lease = ?, dest_lease = NULL, dest_operation = NULL,
        ${next} WHERE lease_uuid = ? AND generation = ? AND status = 'restoring'`,
    ),
    reap: db.prepare(
      `UPDATE retentions SET status = 'reaping', reap_reason = ?, ${next}
        WHERE lease_uuid = ? AND generation = ? AND status IN ('active', 'restoring', 'closing')`,
    ),
    missed: db.prepare(
      `UPDATE retentions SET orphan_misses = orphan_misses + 1, ${next}
        WHERE lease_uuid = ? AND generation = ? AND status = 'active'`,
    ),
    resetMisses: db.prepare(
      `UPDATE retentions SET orphan_misses = 0, ${next} WHERE lease_uuid = ? AND generation = ? AND orphan_misses > 0`,
    ),
    remove: db.prepare("DELETE FROM retentions WHERE lease_uuid = ? AND generation = ?"),
    clearDiscard: db.prepare("UPDATE retentions SET discard_lease = NULL WHERE discard_lease = ?"),
  };
}
