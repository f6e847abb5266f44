import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import type { MaintenanceRequest } from "../../../core/backend-contract/index.ts";
import { redactManifestPayload } from "../../../core/manifest/index.ts";
import type { CapturedLogs } from "../journal/diagnostics.ts";
import type { CallbackFacts, Failure, LeaseHeadRecord } from "../journal/records.ts";
import { afterFailure, afterReady, afterRequestedRestart, type FailureStreak } from "../terminal-budget.ts";
import type { MaintenanceKind, MaintenancePhase, MaintenanceRecord } from "./records.ts";

/**
 * The maintenance journal: restart and update commands keyed by providerd's
 * maintenance_id, in the journal's SQLite file so "settle the command + move the release
 * + queue the completion" is one transaction with everything else the lease does. A
 * command holds the lease's single mutation head ("maintenance") from admission to
 * settlement. Settled rows are the lease's receipt window (exact replays answer from
 * them); the high-water mark of admitted_at outlives them, so a stamped command that is
 * not newer than the newest one the lease accepted can never run again. Its SQL and row
 * decoding are at the end of this file.
 */
export const RECEIPT_WINDOW = 1_024;

export type { MaintenanceKind, MaintenancePhase, MaintenanceRecord } from "./records.ts";

/** What the store needs of the journal it lives in (its private helpers, lent). */
export interface JournalPort {
  write<T>(fn: () => T): T;
  head(leaseUuid: string): LeaseHeadRecord | undefined;
  enqueueMaintenance(
    lease: LeaseHeadRecord,
    facts: CallbackFacts,
    nowMs: number,
    extra: CompletionFields,
  ): void;
  putStreak(leaseUuid: string, s: FailureStreak): void;
  putDiagnostic(lease: LeaseHeadRecord, failure: Failure, nowMs: number, logs?: CapturedLogs): void;
  dropDiagnostic(leaseUuid: string): void;
}

/** The fields a maintenance completion adds to the callback body. */
export interface CompletionFields {
  maintenance_id: string;
  maintenance_admitted_at?: string;
}

export interface AdmitMaintenance {
  req: MaintenanceRequest;
  /** The lease generation the caller checked (compare-and-swap). */
  generation: number;
  operationId: string;
  sourceRelease: number;
  image: string;
  nowMs: number;
}

/** What a command asks for, as a sha256 hex: kind, lease, payload hash and admission stamp. */
export function commandDigest(req: MaintenanceRequest): string {
  const doc = JSON.stringify([req.kind, req.leaseUuid, req.payloadHash ?? "", req.admittedKey ?? ""]);
  return createHash("sha256").update(doc).digest("hex");
}

export class MaintenanceStore {
  readonly #journal: JournalPort;
  readonly #statements: ReturnType<typeof prepare>;
  /** Settled receipts kept per lease: RECEIPT_WINDOW unless the operator set another. */
  readonly receiptWindow: number;

  constructor(db: Database.Database, receiptWindow: number | undefined, port: JournalPort) {
    this.#journal = port;
    this.#statements = prepare(db);
    this.receiptWindow = receiptWindow ?? RECEIPT_WINDOW;
  }

  // ---- reads ----

  get(maintenanceId: string): MaintenanceRecord | undefined {
    const r = this.#statements.get.get(maintenanceId) as Record<string, unknown> | undefined;
    return r === undefined ? undefined : toRecord(r);
  }

  /** The lease's unsettled command (at most one: it holds the mutation head). */
  pending(leaseUuid: string): MaintenanceRecord | undefined {
    const r = this.#statements.pending.get(leaseUuid) as Record<string, unknown> | undefined;
    return r === undefined ? undefined : toRecord(r);
  }

  /** The newest admitted_key the lease accepted, if it ever accepted a stamped command. */
  highWater(leaseUuid: string): string | undefined {
    return (this.#statements.highWater.get(leaseUuid) as { high_water: string } | undefined)?.high_water;
  }

  /** True while an earlier command's exact completion waits in the outbox. */
  completionQueued(leaseUuid: string): boolean {
    return this.#statements.queued.get(leaseUuid) !== undefined;
  }

  receipts(leaseUuid: string): number {
    return (this.#statements.count.get(leaseUuid) as { n: number }).n;
  }

  // ---- transitions ----

  /**
   * Journals a command and moves the lease's head to it (status restarting/updating),
   * resetting its failure streak; an update appends its deploying release. Undefined when
   * the lease moved since the caller checked it.
   */
  admit(a: AdmitMaintenance): MaintenanceRecord | undefined {
    return this.#journal.write(() => {
      const { req } = a;
      const status = req.kind === "restart" ? "restarting" : "updating";
      if (this.#statements.beginLease.run(status, req.leaseUuid, a.generation).changes !== 1)
        return undefined;
      const lease = this.#journal.head(req.leaseUuid) as LeaseHeadRecord;
      this.#journal.putStreak(req.leaseUuid, afterRequestedRestart(lease.streak));
      const seq = (this.#statements.nextSeq.get(req.leaseUuid) as { n: number }).n;
      let target = a.sourceRelease;
      if (req.kind === "update") {
        const newest = (this.#statements.newestRelease.get(req.leaseUuid) as { v: number }).v;
        target = Math.max(newest, a.sourceRelease) + 1;
        this.#statements.insertRelease.run(
          req.leaseUuid,
          target,
          a.operationId,
          a.image,
          req.payload === undefined ? null : redactManifestPayload(req.payload),
          a.nowMs,
          req.maintenanceId,
        );
      }
      const record: MaintenanceRecord = {
        maintenanceId: req.maintenanceId,
        leaseUuid: req.leaseUuid,
        seq,
        kind: req.kind,
        digest: commandDigest(req),
        admittedAt: req.admittedAt,
        admittedKey: req.admittedKey,
        payload: req.payload,
        payloadHash: req.payloadHash,
        image: a.image,
        sourceRelease: a.sourceRelease,
        targetRelease: target,
        phase: "pending",
        outcome: undefined,
        reason: undefined,
        message: undefined,
        createdAtMs: a.nowMs,
      };
      this.#statements.insert.run({
        maintenance_id: record.maintenanceId,
        lease_uuid: record.leaseUuid,
        seq,
        kind: record.kind,
        digest: record.digest,
        admitted_at: record.admittedAt ?? null,
        admitted_key: record.admittedKey ?? null,
        payload: record.payload ?? null,
        payload_hash: record.payloadHash ?? null,
        image: record.image,
        source_release: record.sourceRelease,
        target_release: target,
        created_at: a.nowMs,
      });
      if (req.admittedKey !== undefined) this.#statements.putMark.run(req.leaseUuid, req.admittedKey);
      // The lease keeps its receiptWindow newest commands (this one included): older settled ones go.
      this.#statements.evict.run(req.leaseUuid, req.leaseUuid, this.receiptWindow);
      return record;
    });
  }

  /** pending → started: from here on the substrate may have been called. */
  markStarted(maintenanceId: string): boolean {
    return this.#journal.write(() => this.#statements.markStarted.run(maintenanceId).changes === 1);
  }

  /**
   * Settles the lease's current command as done: a restart keeps its release; an update
   * promotes its release (active, the previous one superseded) and becomes the lease's
   * payload. The exact completion is queued in the same transaction.
   */
  settleSuccess(cmd: MaintenanceRecord, nowMs: number): boolean {
    return this.#journal.write(() => {
      const lease = this.#current(cmd);
      if (lease === undefined) return false;
      if (cmd.kind === "update") {
        this.#statements.supersede.run(cmd.leaseUuid, cmd.targetRelease);
        this.#statements.setRelease.run("active", null, null, cmd.leaseUuid, cmd.targetRelease);
        this.#statements.promote.run(
          cmd.payload ?? null,
          cmd.payloadHash ?? null,
          cmd.image,
          cmd.targetRelease,
          cmd.leaseUuid,
        );
      }
      this.#statements.settleRow.run("success", null, null, nowMs, cmd.maintenanceId);
      this.#statements.settleLease.run("ready", null, null, 0, cmd.leaseUuid);
      this.#journal.putStreak(cmd.leaseUuid, afterReady(lease.streak, nowMs));
      this.#journal.dropDiagnostic(cmd.leaseUuid);
      this.#journal.enqueueMaintenance(lease, { status: "success", error: "" }, nowMs, completionFields(cmd));
      return true;
    });
  }

  /**
   * Settles the lease's current command as failed. An update whose previous release was
   * restored (`rolledBack`) has its release recorded failed and the lease stays ready on
   * the previous one, reporting the failure. A failed restart, or an update whose rollback
   * failed too, leaves the lease failed.
   */
  settleFailure(
    cmd: MaintenanceRecord,
    failure: Failure,
    nowMs: number,
    rolledBack = false,
    logs?: CapturedLogs,
  ): boolean {
    return this.#journal.write(() => {
      const lease = this.#current(cmd);
      if (lease === undefined) return false;
      const ready = cmd.kind === "update" && rolledBack;
      this.#statements.settleLease.run(
        ready ? "ready" : "failed",
        failure.reason,
        failure.message,
        1,
        cmd.leaseUuid,
      );
      if (!ready) this.#journal.putStreak(cmd.leaseUuid, afterFailure(lease.streak, failure, nowMs));
      this.#journal.putDiagnostic(lease, failure, nowMs, logs);
      this.#fail(cmd, lease, failure, nowMs);
      return true;
    });
  }

  /**
   * A close pre-empts the lease's unsettled command (call inside the close's
   * transaction): it settles failed, its completion queued before the close's. True when
   * there was one.
   */
  preempt(leaseUuid: string, nowMs: number): boolean {
    const cmd = this.pending(leaseUuid);
    const lease = this.#journal.head(leaseUuid);
    if (cmd === undefined || lease === undefined) return false;
    const failure = { reason: "Closed", message: `lease was closed before the ${cmd.kind} completed` };
    this.#fail(cmd, lease, failure, nowMs);
    return true;
  }

  /** A completed close forgets the lease's commands and mark (call inside its transaction). */
  forget(leaseUuid: string): void {
    this.#statements.forget.run(leaseUuid);
    this.#statements.forgetMark.run(leaseUuid);
  }

  /** Drops superseded and failed releases created before `cutoffMs`; active ones stay. */
  expireReleases(cutoffMs: number): number {
    return this.#journal.write(() => this.#statements.expireReleases.run(cutoffMs).changes);
  }

  /** The command's row (and an update's release) settle failed; its completion is queued. */
  #fail(cmd: MaintenanceRecord, lease: LeaseHeadRecord, failure: Failure, nowMs: number): void {
    if (cmd.kind === "update") {
      this.#statements.setRelease.run(
        "failed",
        failure.reason,
        failure.message,
        cmd.leaseUuid,
        cmd.targetRelease,
      );
    }
    this.#statements.settleRow.run("failed", failure.reason, failure.message, nowMs, cmd.maintenanceId);
    const facts = { status: "failed", error: failure.message } as const;
    this.#journal.enqueueMaintenance(lease, facts, nowMs, completionFields(cmd));
  }

  /** The lease's head, if `cmd` is still the unsettled command holding it. */
  #current(cmd: MaintenanceRecord): LeaseHeadRecord | undefined {
    const lease = this.#journal.head(cmd.leaseUuid);
    if (lease?.head !== "maintenance") return undefined;
    return this.pending(cmd.leaseUuid)?.maintenanceId === cmd.maintenanceId ? lease : undefined;
  }
}

function completionFields(cmd: MaintenanceRecord): CompletionFields {
  const out: CompletionFields = { maintenance_id: cmd.maintenanceId };
  if (cmd.admittedAt !== undefined) out.maintenance_admitted_at = cmd.admittedAt;
  return out;
}

// The maintenance journal's SQL, prepared once per connection, and its row decoding.

type Row = Record<string, unknown>;

function toRecord(r: Row): MaintenanceRecord {
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

function prepare(db: Database.Database) {
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
