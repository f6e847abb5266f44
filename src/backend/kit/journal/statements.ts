import type Database from "better-sqlite3";
import type { InstanceSpec, LeaseItem } from "../substrate.ts";
import type { FailureStreak } from "../terminal-budget.ts";
import type { LeaseHead, LeasePhase, LeaseRecord, LeaseStatus } from "./records.ts";

/** Row decoding and the journal's SQL, prepared once per connection. */
type Row = Record<string, unknown>;

export function toStreak(r: Row): FailureStreak {
  return {
    failures: r.streak_failures as number,
    startedAtMs: (r.streak_started_at as number | null) ?? undefined,
    exhausted: r.streak_exhausted === 1,
    readySinceMs: (r.ready_since as number | null) ?? undefined,
  };
}

export function toLease(r: Row): LeaseRecord {
  return {
    leaseUuid: r.lease_uuid as string,
    tenant: r.tenant as string,
    providerUuid: r.provider_uuid as string,
    operationId: r.operation_id as string,
    callbackUrl: r.callback_url as string,
    lifecycleUrl: r.lifecycle_url as string,
    items: JSON.parse(r.items as string) as LeaseItem[],
    instances: JSON.parse(r.instances as string) as InstanceSpec[],
    payload: (r.payload as Buffer | null) ?? undefined,
    payloadHash: (r.payload_hash as string | null) ?? undefined,
    image: r.image as string,
    release: r.release as number,
    head: r.head as LeaseHead,
    phase: (r.phase as LeasePhase | null) ?? undefined,
    status: r.status as LeaseStatus,
    failCount: r.fail_count as number,
    reason: (r.reason as string | null) ?? undefined,
    message: (r.message as string | null) ?? undefined,
    createdAtMs: r.created_at as number,
    admittedAtMs: r.admitted_at as number,
    generation: r.generation as number,
    streak: toStreak(r),
  };
}

export function prepare(db: Database.Database) {
  return {
    getLease: db.prepare("SELECT * FROM leases WHERE lease_uuid = ?"),
    getHead: db.prepare(
      "SELECT tenant, provider_uuid, operation_id, callback_url, lifecycle_url, release, head, status, fail_count, created_at, generation, streak_failures, streak_started_at, streak_exhausted, ready_since FROM leases WHERE lease_uuid = ?",
    ),
    getTombstone: db.prepare("SELECT 1 FROM tombstones WHERE lease_uuid = ?"),
    getOperation: db.prepare("SELECT lease_uuid, request_digest FROM operations WHERE operation_id = ?"),
    insertOperation: db.prepare(
      "INSERT INTO operations (operation_id, lease_uuid, request_digest) VALUES (?, ?, ?)",
    ),
    listLeases: db.prepare("SELECT * FROM leases WHERE lease_uuid > ? ORDER BY lease_uuid LIMIT ?"),
    leasesWithHead: db.prepare("SELECT * FROM leases WHERE head = ? ORDER BY admitted_at"),
    countLeases: db.prepare("SELECT count(*) AS n FROM leases"),
    countTombstones: db.prepare("SELECT count(*) AS n FROM tombstones"),
    releases: db.prepare("SELECT * FROM releases WHERE lease_uuid = ? ORDER BY version"),
    newestRelease: db.prepare("SELECT coalesce(max(version), 0) AS v FROM releases WHERE lease_uuid = ?"),
    upsertLease: db.prepare(`
      INSERT INTO leases (lease_uuid, tenant, provider_uuid, operation_id, callback_url, lifecycle_url, items,
        instances, payload, payload_hash, image, release, head, phase, status, fail_count, reason, message,
        created_at, admitted_at, generation)
      VALUES (@lease_uuid, @tenant, @provider_uuid, @operation_id, @callback_url, @lifecycle_url, @items,
        @instances, @payload, @payload_hash, @image, @release, 'operation', 'before_effects', 'provisioning',
        @fail_count, NULL, NULL, @created_at, @admitted_at, @generation)
      ON CONFLICT (lease_uuid) DO UPDATE SET tenant = excluded.tenant, provider_uuid = excluded.provider_uuid,
        operation_id = excluded.operation_id, callback_url = excluded.callback_url,
        lifecycle_url = excluded.lifecycle_url, items = excluded.items, instances = excluded.instances,
        payload = excluded.payload, payload_hash = excluded.payload_hash, image = excluded.image,
        release = excluded.release, head = 'operation', phase = 'before_effects', status = 'provisioning',
        reason = NULL, message = NULL, admitted_at = excluded.admitted_at, generation = excluded.generation`),
    insertRelease: db.prepare(
      "INSERT INTO releases (lease_uuid, version, operation_id, image, status, manifest, created_at) VALUES (?, ?, ?, ?, 'deploying', ?, ?)",
    ),
    setItems: db.prepare("UPDATE leases SET items = ? WHERE lease_uuid = ?"),
    markStarted: db.prepare(
      "UPDATE leases SET phase = 'started', generation = generation + 1 WHERE lease_uuid = ? AND generation = ? AND head = 'operation' AND phase = 'before_effects'",
    ),
    supersedeActive: db.prepare(
      "UPDATE releases SET status = 'superseded' WHERE lease_uuid = ? AND status = 'active' AND version <> ?",
    ),
    setReleaseStatus: db.prepare(
      "UPDATE releases SET status = ?, reason = ?, message = ? WHERE lease_uuid = ? AND version = ?",
    ),
    settleLease: db.prepare(
      "UPDATE leases SET head = 'none', phase = NULL, status = ?, reason = ?, message = ?, fail_count = fail_count + ?, generation = generation + 1 WHERE lease_uuid = ?",
    ),
    setStreak: db.prepare(
      "UPDATE leases SET streak_failures = ?, streak_started_at = ?, streak_exhausted = ?, ready_since = ? WHERE lease_uuid = ?",
    ),
    bumpGeneration: db.prepare("UPDATE leases SET generation = generation + 1 WHERE lease_uuid = ?"),
    insertReceipt: db.prepare(
      "INSERT OR REPLACE INTO receipts (lease_uuid, operation_id, outcome) VALUES (?, ?, ?)",
    ),
    beginClose: db.prepare(
      "UPDATE leases SET head = 'close', phase = 'started', status = 'deprovisioning', generation = generation + 1 WHERE lease_uuid = ?",
    ),
    setCloseTrouble: db.prepare(
      "UPDATE leases SET reason = ?, message = ? WHERE lease_uuid = ? AND head = 'close' AND generation = ?",
    ),
    deleteReleases: db.prepare("DELETE FROM releases WHERE lease_uuid = ?"),
    pinRelease: db.prepare("UPDATE releases SET image_digest = ? WHERE lease_uuid = ? AND version = ?"),
    releasePins: db.prepare("SELECT image_digest FROM releases WHERE lease_uuid = ? AND version = ?"),
    deleteLease: db.prepare("DELETE FROM leases WHERE lease_uuid = ?"),
    insertTombstone: db.prepare(
      "INSERT OR IGNORE INTO tombstones (lease_uuid, tenant, closed_at) VALUES (?, ?, ?)",
    ),
    insertOutbox: db.prepare(
      "INSERT INTO outbox (delivery_id, lease_uuid, kind, url, body, storage_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    pendingResult: db.prepare("SELECT 1 FROM outbox WHERE lease_uuid = ? AND kind <> 'lifecycle' LIMIT 1"),
    deleteLifecycle: db.prepare("DELETE FROM outbox WHERE lease_uuid = ? AND kind = 'lifecycle'"),
    outboxLeases: db.prepare(
      "SELECT lease_uuid, min(seq) AS first FROM outbox GROUP BY lease_uuid ORDER BY first",
    ),
    outboxHead: db.prepare("SELECT * FROM outbox WHERE lease_uuid = ? ORDER BY seq LIMIT 1"),
    deleteOutbox: db.prepare("DELETE FROM outbox WHERE seq = ? AND delivery_id = ?"),
    countOutbox: db.prepare("SELECT count(*) AS n FROM outbox"),
    expireLifecycle: db.prepare("DELETE FROM outbox WHERE kind = 'lifecycle' AND created_at < ?"),
    storageId: db.prepare("SELECT value FROM meta WHERE key = 'storage_id'"),
  };
}
