import type Database from "better-sqlite3";
import type { MaintenanceKind, MaintenancePhase, MaintenanceRecord } from "./records.ts";

/** The maintenance journal's SQL, prepared once per connection, and its row decoding. */
type Row = Record<string, unknown>;

export function toRecord(r: Row): MaintenanceRecord {
  return {
    maintenanceId: r.maintenance_id as string,
    leaseUuid: r.lease_uuid as string,
    seq: r.seq as number,
    kind: r.kind as MaintenanceKind,
    digest: r.digest as string,
    admittedAt: (r.admitted_at as string | null) ?? undefined,
    admittedKey: (r.admitted_key as string | null) ?? undefined,
    payload: (r.payload as Buffer | null) ?? undefined,
    payloadHash: (r.payload_hash as string | null) ?? undefined,
    image: r.image as string,
    sourceRelease: r.source_release as number,
    targetRelease: r.target_release as number,
    phase: r.phase as MaintenancePhase,
    outcome: (r.outcome as MaintenanceRecord["outcome"] | null) ?? undefined,
    reason: (r.reason as string | null) ?? undefined,
    message: (r.message as string | null) ?? undefined,
    createdAtMs: r.created_at as number,
  };
}

export function prepare(db: Database.Database) {
  return {
    get: db.prepare("SELECT * FROM maintenance WHERE maintenance_id = ?"),
    pending: db.prepare("SELECT * FROM maintenance WHERE lease_uuid = ? AND phase <> 'settled'"),
    count: db.prepare("SELECT count(*) AS n FROM maintenance WHERE lease_uuid = ?"),
    highWater: db.prepare("SELECT high_water FROM maintenance_marks WHERE lease_uuid = ?"),
    putMark: db.prepare(
      "INSERT INTO maintenance_marks (lease_uuid, high_water) VALUES (?, ?) ON CONFLICT (lease_uuid) DO UPDATE SET high_water = max(high_water, excluded.high_water)",
    ),
    queued: db.prepare("SELECT 1 FROM outbox WHERE lease_uuid = ? AND kind = 'maintenance' LIMIT 1"),
    nextSeq: db.prepare("SELECT coalesce(max(seq), 0) + 1 AS n FROM maintenance WHERE lease_uuid = ?"),
    newestRelease: db.prepare("SELECT coalesce(max(version), 0) AS v FROM releases WHERE lease_uuid = ?"),
    beginLease: db.prepare(
      "UPDATE leases SET head = 'maintenance', phase = NULL, status = ?, generation = generation + 1 WHERE lease_uuid = ? AND generation = ? AND head = 'none' AND status = 'ready'",
    ),
    insertRelease: db.prepare(
      "INSERT INTO releases (lease_uuid, version, operation_id, image, status, manifest, created_at, maintenance_id) VALUES (?, ?, ?, ?, 'deploying', ?, ?, ?)",
    ),
    insert: db.prepare(`
      INSERT INTO maintenance (maintenance_id, lease_uuid, seq, kind, digest, admitted_at, admitted_key, payload,
        payload_hash, image, source_release, target_release, phase, created_at)
      VALUES (@maintenance_id, @lease_uuid, @seq, @kind, @digest, @admitted_at, @admitted_key, @payload,
        @payload_hash, @image, @source_release, @target_release, 'pending', @created_at)`),
    evict: db.prepare(
      "DELETE FROM maintenance WHERE lease_uuid = ? AND phase = 'settled' AND seq <= (SELECT seq FROM maintenance WHERE lease_uuid = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
    ),
    markStarted: db.prepare(
      "UPDATE maintenance SET phase = 'started' WHERE maintenance_id = ? AND phase = 'pending'",
    ),
    settleRow: db.prepare(
      "UPDATE maintenance SET phase = 'settled', outcome = ?, reason = ?, message = ?, payload = NULL, settled_at = ? WHERE maintenance_id = ? AND phase <> 'settled'",
    ),
    settleLease: db.prepare(
      "UPDATE leases SET head = 'none', phase = NULL, status = ?, reason = ?, message = ?, fail_count = fail_count + ?, generation = generation + 1 WHERE lease_uuid = ? AND head = 'maintenance'",
    ),
    promote: db.prepare(
      "UPDATE leases SET payload = ?, payload_hash = ?, image = ?, release = ? WHERE lease_uuid = ?",
    ),
    supersede: db.prepare(
      "UPDATE releases SET status = 'superseded' WHERE lease_uuid = ? AND status = 'active' AND version <> ?",
    ),
    setRelease: db.prepare(
      "UPDATE releases SET status = ?, reason = ?, message = ? WHERE lease_uuid = ? AND version = ?",
    ),
    forget: db.prepare("DELETE FROM maintenance WHERE lease_uuid = ?"),
    forgetMark: db.prepare("DELETE FROM maintenance_marks WHERE lease_uuid = ?"),
    expireReleases: db.prepare(
      "DELETE FROM releases WHERE status IN ('superseded', 'failed') AND created_at < ?",
    ),
  };
}
