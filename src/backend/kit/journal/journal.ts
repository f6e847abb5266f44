// Over 500 lines: the lease, release, operation and outbox tables with their SQL in one place, so each transition is one transaction.
import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import type { CallbackBody } from "../../../core/backend-contract/index.ts";
import {
  keepStoredCredentials,
  REDACTED_PASSWORD,
  redactManifestPayload,
} from "../../../core/manifest/index.ts";
import { newUuidV4 } from "../../../core/uuid.ts";
import type { SqliteDatabase } from "../../../sqlite/index.ts";
import { type CompletionFields, MaintenanceStore } from "../maintenance/store.ts";
import type { InstanceSpec, LeaseItem } from "../substrate.ts";
import {
  afterFailure,
  afterReady,
  afterRequestedRestart,
  type FailureStreak,
  NO_STREAK,
} from "../terminal-budget.ts";
import { type CapturedLogs, DiagnosticsTable } from "./diagnostics.ts";
import { type OpenJournalOptions, openJournalDatabase } from "./identity.ts";
import type {
  CallbackFacts,
  Failure,
  LeaseHead,
  LeaseHeadRecord,
  LeasePhase,
  LeaseRecord,
  LeaseStatus,
  OutboxRow,
  ReleaseRecord,
} from "./records.ts";

export type {
  CallbackFacts,
  Failure,
  LeaseHead,
  LeaseHeadRecord,
  LeasePhase,
  LeaseRecord,
  LeaseStatus,
  OutboxRow,
  ReleaseRecord,
} from "./records.ts";

export interface AdmitInput {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  operationId: string;
  callbackUrl: string;
  lifecycleUrl: string;
  items: LeaseItem[];
  instances: InstanceSpec[];
  payload: Buffer | undefined;
  payloadHash: string | undefined;
  image: string;
  /** What the operation asked for (see `requestDigest`), kept with its operation id for good. */
  requestDigest: string;
  nowMs: number;
}

/** The lease an operation id belongs to, and the digest of its admitted request (undefined: admitted before digests). */
export interface OperationRecord {
  leaseUuid: string;
  requestDigest: string | undefined;
}

type Row = Record<string, unknown>;

export interface JournalOptions extends OpenJournalOptions {
  /** Our backend name, stamped into every callback body. */
  backendName: string;
  /** Maximum number of live leases plus tombstones (a definite capacity refusal beyond it). */
  maxLeases?: number;
  /** Settled restart/update receipts kept per lease (default RECEIPT_WINDOW, 1,024). */
  maintenanceReceipts?: number;
}

/**
 * The backend's durable journal: one mutation head per lease, write-ahead operation
 * intents, release history, closed-lease tombstones and the callback outbox, all in one
 * SQLite file so "settle the intent + write the release + append the callback" is one
 * transaction. Every method is synchronous and runs in its own transaction; heads move by
 * compare-and-swap on `generation`, so a stale worker can never settle a newer intent.
 */
export class Journal {
  readonly db: Database.Database;
  readonly storageId: string;
  readonly backendName: string;
  readonly maxLeases: number;
  /** The last failure of each lease, outliving the lease row (see DiagnosticsTable). */
  readonly diagnostics: DiagnosticsTable;
  /** Restart/update commands and their receipts (see maintenance/store.ts). */
  readonly maintenance: MaintenanceStore;
  readonly #statements: ReturnType<typeof prepare>;
  readonly #database: SqliteDatabase;
  /** Cached leaseCount(); a lease UUID takes a slot on admission and keeps it as a tombstone. */
  #slots: number | undefined;
  readonly #path: string;
  readonly #inode: number | undefined;

  constructor(opts: JournalOptions) {
    const opened = openJournalDatabase(opts);
    this.#database = opened.database;
    this.db = opened.database.db;
    this.storageId = opened.storageId;
    this.backendName = opts.backendName;
    this.maxLeases = opts.maxLeases ?? 100_000;
    this.#statements = prepare(this.db);
    this.diagnostics = new DiagnosticsTable(this.db, (fn) => this.#write(fn));
    this.maintenance = new MaintenanceStore(this.db, opts.maintenanceReceipts, {
      write: (fn) => this.#write(fn),
      head: (lease) => this.#headOf(lease),
      enqueueMaintenance: (lease, facts, nowMs, extra) =>
        this.#enqueue(lease, "maintenance", lease.lifecycleUrl, facts, nowMs, extra),
      putStreak: (lease, streak) => this.#putStreak(lease, streak),
      putDiagnostic: (lease, failure, nowMs, logs) => this.#putDiagnostic(lease, failure, nowMs, logs),
      dropDiagnostic: (lease) => this.diagnostics.drop(lease),
    });
    this.#path = opts.path;
    this.#inode = opts.path === ":memory:" ? undefined : statSync(opts.path).ino;
  }

  close(): void {
    this.#database.close();
  }

  /** Set once a commit failed: the journal then refuses writes until the backend restarts. */
  get writeFailure(): Error | undefined {
    return this.#database.failure;
  }

  /** Whether every commit so far is on stable storage now (`durable()` would not wait). */
  get allDurable(): boolean {
    return this.#database.allDurable;
  }

  /** Resolves once every commit so far is on stable storage (group commit; see WalDurability). */
  durable(): Promise<void> {
    return this.#database.durable();
  }

  /**
   * Called inside the transaction that settles an operation (success, failure, or a close
   * pre-empting it), so a module keeping its own rows (retention) moves with the lease.
   */
  onOperationSettled: ((leaseUuid: string, outcome: "success" | "failed") => void) | undefined;

  /** Runs `fn` as one write transaction (nested calls join it), for a caller's own rows. */
  transaction<T>(fn: () => T): T {
    return this.#write(fn);
  }

  /**
   * Runs `fn` as one atomic write, counted for the group commit. The writes of one
   * event-loop turn share a SQLite transaction (see WalDurability), so `durable()` is
   * still what makes a write safe to announce.
   */
  #write<T>(fn: () => T): T {
    return this.#database.write(fn);
  }

  // ---- reads ----

  getLease(leaseUuid: string): LeaseRecord | undefined {
    const row = this.#statements.getLease.get(leaseUuid) as Row | undefined;
    return row === undefined ? undefined : toLease(row);
  }

  isTombstoned(leaseUuid: string): boolean {
    return this.#statements.getTombstone.get(leaseUuid) !== undefined;
  }

  /** The lease an operation id was admitted for, if it ever was (rows are permanent). */
  operation(operationId: string): OperationRecord | undefined {
    const r = this.#statements.getOperation.get(operationId) as Row | undefined;
    if (r === undefined) return undefined;
    return {
      leaseUuid: r.lease_uuid as string,
      requestDigest: (r.request_digest as string | null) ?? undefined,
    };
  }

  /** Live leases in UUID order, starting after `after`, at most `limit` (all when undefined). */
  listLeases(after: string | undefined, limit: number | undefined): LeaseRecord[] {
    const rows = this.#statements.listLeases.all(after ?? "", limit ?? -1) as Row[];
    return rows.map(toLease);
  }

  leasesWithHead(head: Exclude<LeaseHead, "none">): LeaseRecord[] {
    return (this.#statements.leasesWithHead.all(head) as Row[]).map(toLease);
  }

  releases(leaseUuid: string): ReleaseRecord[] {
    return (this.#statements.releases.all(leaseUuid) as Row[]).map((r) => ({
      version: r.version as number,
      operationId: r.operation_id as string,
      image: r.image as string,
      status: r.status as ReleaseRecord["status"],
      manifest: (r.manifest as Buffer | null) ?? undefined,
      images: parsePins(r.image_digest),
      reason: (r.reason as string | null) ?? undefined,
      message: (r.message as string | null) ?? undefined,
      createdAtMs: r.created_at as number,
    }));
  }

  /**
   * Records the images release `version` runs (service → immutable reference), before
   * anything is created from them; false when the release row is gone (the lease closed).
   */
  pinImages(leaseUuid: string, version: number, images: Readonly<Record<string, string>>): boolean {
    return this.#statements.pinRelease.run(JSON.stringify(images), leaseUuid, version).changes === 1;
  }

  /** The images release `version` was pinned to, or undefined before they were resolved. */
  pinnedImages(leaseUuid: string, version: number): Readonly<Record<string, string>> | undefined {
    const row = this.#statements.releasePins.get(leaseUuid, version) as Row | undefined;
    return parsePins(row?.image_digest);
  }

  /** Live leases plus tombstones (the lease-UUID slots in use); O(1) after the first call. */
  leaseCount(): number {
    this.#slots ??=
      (this.#statements.countLeases.get() as { n: number }).n +
      (this.#statements.countTombstones.get() as { n: number }).n;
    return this.#slots;
  }

  // ---- operation intents ----

  /**
   * Persists a provision intent (phase before_effects) with its deploying release. A
   * failed lease may be provisioned again under a new operation: the next release
   * version is written and the fail count kept. The caller has checked the head.
   */
  admitOperation(input: AdmitInput): LeaseRecord {
    return this.#write(() => {
      const prev = this.#headOf(input.leaseUuid);
      // A failed update took a version of its own above the lease's release.
      const newest =
        prev === undefined ? 0 : (this.#statements.newestRelease.get(input.leaseUuid) as { v: number }).v;
      const release = prev === undefined ? 1 : Math.max(prev.release, newest) + 1;
      if (prev === undefined && this.#slots !== undefined) this.#slots++;
      const generation = (prev?.generation ?? 0) + 1;
      // providerd keeps only the masked manifest once a lease ran: its re-provision gets the
      // registry passwords this journal (their one home) already holds.
      const masked = prev !== undefined && input.payload?.includes(REDACTED_PASSWORD) === true;
      const held = masked ? this.getLease(input.leaseUuid)?.payload : undefined;
      const payload =
        input.payload === undefined ? undefined : Buffer.from(keepStoredCredentials(input.payload, held));
      this.#statements.upsertLease.run({
        lease_uuid: input.leaseUuid,
        tenant: input.tenant,
        provider_uuid: input.providerUuid,
        operation_id: input.operationId,
        callback_url: input.callbackUrl,
        lifecycle_url: input.lifecycleUrl,
        items: JSON.stringify(input.items),
        instances: JSON.stringify(input.instances),
        payload: payload ?? null,
        payload_hash: input.payloadHash ?? null,
        image: input.image,
        release,
        fail_count: prev?.failCount ?? 0,
        created_at: prev?.createdAtMs ?? input.nowMs,
        admitted_at: input.nowMs,
        generation,
      });
      this.#statements.insertOperation.run(input.operationId, input.leaseUuid, input.requestDigest);
      this.#statements.insertRelease.run(
        input.leaseUuid,
        release,
        input.operationId,
        input.image,
        payload === undefined ? null : redactManifestPayload(payload),
        input.nowMs,
      );
      const record: LeaseRecord = {
        leaseUuid: input.leaseUuid,
        tenant: input.tenant,
        providerUuid: input.providerUuid,
        operationId: input.operationId,
        callbackUrl: input.callbackUrl,
        lifecycleUrl: input.lifecycleUrl,
        items: input.items,
        instances: input.instances,
        payload,
        payloadHash: input.payloadHash,
        image: input.image,
        release,
        head: "operation",
        phase: "before_effects",
        status: "provisioning",
        failCount: prev?.failCount ?? 0,
        reason: undefined,
        message: undefined,
        createdAtMs: prev?.createdAtMs ?? input.nowMs,
        admittedAtMs: input.nowMs,
        generation,
        streak: prev?.streak ?? NO_STREAK,
      };
      return record;
    });
  }

  /**
   * The irreversible-effect boundary: flips before_effects → started. Undefined if the head
   * moved. Pass the record the caller holds to skip reading it back.
   */
  /**
   * Records the chain's custom domains (reconcile_custom_domain) on the lease's items, matched
   * by service name, so a restarted backend routes them again. Only `custom_domain` changes;
   * false when the lease is unknown or nothing changed.
   */
  setCustomDomains(leaseUuid: string, items: readonly LeaseItem[]): boolean {
    return this.#write(() => {
      const lease = this.getLease(leaseUuid);
      if (lease === undefined) return false;
      const domains = new Map(items.map((i) => [i.service_name ?? "", i.custom_domain]));
      const next = lease.items.map((item) => {
        const { custom_domain: _, ...rest } = item;
        const domain = domains.get(item.service_name ?? "");
        return domain === undefined || domain === "" ? rest : { ...rest, custom_domain: domain };
      });
      if (JSON.stringify(next) === JSON.stringify(lease.items)) return false;
      this.#statements.setItems.run(JSON.stringify(next), leaseUuid);
      return true;
    });
  }

  markStarted(leaseUuid: string, generation: number, known?: LeaseRecord): LeaseRecord | undefined {
    const changed = this.#database.writeStatement(
      () => this.#statements.markStarted.run(leaseUuid, generation).changes,
    );
    if (changed !== 1) return undefined;
    if (known?.leaseUuid === leaseUuid && known.generation === generation) {
      return { ...known, phase: "started", generation: generation + 1 };
    }
    return this.getLease(leaseUuid);
  }

  /** Settles an operation as success: active release, receipt and success callback in one transaction. */
  settleSuccess(leaseUuid: string, generation: number, nowMs: number): boolean {
    return this.#write(() => {
      const lease = this.#currentOperation(leaseUuid, generation);
      if (!lease) return false;
      // A lease's first release has no earlier one to supersede.
      if (lease.release > 1) this.#statements.supersedeActive.run(leaseUuid, lease.release);
      this.#statements.setReleaseStatus.run("active", null, null, leaseUuid, lease.release);
      this.#statements.settleLease.run("ready", null, null, 0, leaseUuid);
      this.#putStreak(leaseUuid, afterReady(lease.streak, nowMs));
      this.diagnostics.drop(leaseUuid);
      this.#statements.insertReceipt.run(leaseUuid, lease.operationId, "success");
      this.onOperationSettled?.(leaseUuid, "success");
      this.#enqueue(lease, "operation", lease.callbackUrl, { status: "success", error: "" }, nowMs);
      return true;
    });
  }

  /**
   * Settles an operation as failed: failed release, receipt, failure callback and the
   * lease's diagnostic (with `logs` when they were captured first) in one transaction.
   */
  settleFailure(
    leaseUuid: string,
    generation: number,
    failure: Failure,
    nowMs: number,
    logs?: CapturedLogs,
  ): boolean {
    return this.#write(() => {
      const lease = this.#currentOperation(leaseUuid, generation);
      if (!lease) return false;
      this.#statements.setReleaseStatus.run(
        "failed",
        failure.reason,
        failure.message,
        leaseUuid,
        lease.release,
      );
      this.#statements.settleLease.run("failed", failure.reason, failure.message, 1, leaseUuid);
      this.#putStreak(leaseUuid, afterFailure(lease.streak, failure, nowMs));
      this.#putDiagnostic(lease, failure, nowMs, logs);
      this.#statements.insertReceipt.run(leaseUuid, lease.operationId, "failed");
      this.onOperationSettled?.(leaseUuid, "failed");
      this.#enqueue(
        lease,
        "operation",
        lease.callbackUrl,
        { status: "failed", error: failure.message },
        nowMs,
      );
      return true;
    });
  }

  #currentOperation(leaseUuid: string, generation: number): LeaseHeadRecord | undefined {
    const lease = this.#headOf(leaseUuid);
    if (lease?.head !== "operation" || lease.generation !== generation) return undefined;
    return lease;
  }

  /**
   * An autonomous failure of a ready lease (its workload died). Publishes a coalescible
   * lifecycle observation unless the lease is busy or the observation is stale.
   */
  recordRuntimeFailure(
    leaseUuid: string,
    operationId: string | undefined,
    failure: Failure,
    nowMs: number,
  ): boolean {
    return this.#write(() => {
      const lease = this.#headOf(leaseUuid);
      if (lease?.head !== "none" || lease.status !== "ready") return false;
      if (operationId !== undefined && operationId !== lease.operationId) return false;
      this.#statements.settleLease.run("failed", failure.reason, failure.message, 1, leaseUuid);
      this.#putStreak(leaseUuid, afterFailure(lease.streak, failure, nowMs));
      this.#statements.bumpGeneration.run(leaseUuid);
      this.#putDiagnostic(lease, failure, nowMs, undefined);
      // Drop the observation while a result is still queued for this lease; else coalesce.
      const pendingResult = this.#statements.pendingResult.get(leaseUuid) !== undefined;
      if (!pendingResult) {
        this.#statements.deleteLifecycle.run(leaseUuid);
        this.#enqueue(
          lease,
          "lifecycle",
          lease.lifecycleUrl,
          { status: "failed", error: failure.message },
          nowMs,
        );
      }
      return true;
    });
  }

  /**
   * A restart or update the tenant requested resets the lease's consecutive-failure streak
   * (terminal_budget). The maintenance workflows call this when they admit the command.
   * False when the lease is not live here.
   */
  resetFailureStreak(leaseUuid: string): boolean {
    return this.#write(() => {
      const lease = this.#headOf(leaseUuid);
      if (lease === undefined) return false;
      this.#putStreak(leaseUuid, afterRequestedRestart(lease.streak));
      return true;
    });
  }

  #putStreak(leaseUuid: string, s: FailureStreak): void {
    this.#statements.setStreak.run(
      s.failures,
      s.startedAtMs ?? null,
      s.exhausted ? 1 : 0,
      s.readySinceMs ?? null,
      leaseUuid,
    );
  }

  // ---- close ----

  /**
   * Starts a close. Returns "tombstoned" (already closed), "absent" (never known here: a
   * tombstone is written so the UUID can never be provisioned later) or the closing lease.
   * A close pre-empts an unresolved operation in the same transaction: that operation is
   * settled failed (its callback queued first, keeping results in order).
   */
  beginClose(
    leaseUuid: string,
    nowMs: number,
  ): { kind: "tombstoned" | "absent" } | { kind: "closing"; lease: LeaseRecord; preempted: boolean } {
    return this.#write(() => {
      if (this.isTombstoned(leaseUuid)) return { kind: "tombstoned" as const };
      const lease = this.getLease(leaseUuid);
      if (!lease) {
        this.#statements.insertTombstone.run(leaseUuid, "", nowMs);
        if (this.#slots !== undefined) this.#slots++;
        return { kind: "absent" as const };
      }
      if (lease.head === "close") return { kind: "closing" as const, lease, preempted: false };
      let preempted = lease.head === "operation";
      if (lease.head === "maintenance") preempted = this.maintenance.preempt(leaseUuid, nowMs);
      else if (preempted) {
        const message = "lease was closed before provisioning completed";
        this.#statements.setReleaseStatus.run("failed", "Closed", message, leaseUuid, lease.release);
        this.#statements.insertReceipt.run(leaseUuid, lease.operationId, "failed");
        this.onOperationSettled?.(leaseUuid, "failed");
        this.#enqueue(lease, "operation", lease.callbackUrl, { status: "failed", error: message }, nowMs);
      }
      this.#statements.beginClose.run(leaseUuid);
      return { kind: "closing" as const, lease: this.getLease(leaseUuid) as LeaseRecord, preempted };
    });
  }

  /** Why a close's teardown has not finished yet (shown on the closing lease; the close is retried). */
  noteCloseTrouble(leaseUuid: string, generation: number, failure: Failure): void {
    this.#write(() => {
      this.#statements.setCloseTrouble.run(failure.reason, failure.message, leaseUuid, generation);
    });
  }

  /**
   * Completes a close: history removed, tombstone written, deprovisioned callback queued
   * (`retained`: the data was kept, see retention/).
   */
  completeClose(leaseUuid: string, generation: number, nowMs: number, retained = false): boolean {
    return this.#write(() => {
      const lease = this.#headOf(leaseUuid);
      if (lease?.head !== "close" || lease.generation !== generation) return false;
      this.#statements.deleteLifecycle.run(leaseUuid);
      this.#enqueue(
        lease,
        "close",
        lease.lifecycleUrl,
        { status: "deprovisioned", error: "", retained },
        nowMs,
      );
      this.#statements.deleteReleases.run(leaseUuid);
      this.maintenance.forget(leaseUuid);
      this.#statements.deleteLease.run(leaseUuid);
      this.#statements.insertTombstone.run(leaseUuid, lease.tenant, nowMs);
      return true;
    });
  }

  #putDiagnostic(lease: LeaseHeadRecord, failure: Failure, nowMs: number, logs: CapturedLogs | undefined) {
    this.diagnostics.put({
      leaseUuid: lease.leaseUuid,
      tenant: lease.tenant,
      providerUuid: lease.providerUuid,
      reason: failure.reason,
      message: failure.message,
      failCount: lease.failCount + 1,
      logs,
      createdAtMs: nowMs,
    });
  }

  /** The small, fixed-size part of a lease row that transitions need (no JSON, no payload). */
  #headOf(leaseUuid: string): LeaseHeadRecord | undefined {
    const r = this.#statements.getHead.get(leaseUuid) as Row | undefined;
    return r === undefined ? undefined : toHead(leaseUuid, r);
  }

  // ---- outbox ----

  #enqueue(
    lease: { leaseUuid: string },
    kind: OutboxRow["kind"],
    url: string,
    facts: CallbackFacts,
    nowMs: number,
    maintenance?: CompletionFields,
  ): void {
    const body: CallbackBody = {
      lease_uuid: lease.leaseUuid,
      status: facts.status,
      error: facts.error,
      backend: this.backendName,
      backend_storage_id: this.storageId,
      ...maintenance,
    };
    if (facts.status === "deprovisioned") body.retained = facts.retained ?? false;
    this.#statements.insertOutbox.run(
      newUuidV4(),
      lease.leaseUuid,
      kind,
      url,
      JSON.stringify(body),
      this.storageId,
      nowMs,
    );
  }

  /** Leases with undelivered callbacks, oldest first. */
  outboxLeases(): string[] {
    return (this.#statements.outboxLeases.all() as { lease_uuid: string }[]).map((r) => r.lease_uuid);
  }

  outboxHead(leaseUuid: string): OutboxRow | undefined {
    const r = this.#statements.outboxHead.get(leaseUuid) as Row | undefined;
    if (!r) return undefined;
    return {
      seq: r.seq as number,
      deliveryId: r.delivery_id as string,
      leaseUuid: r.lease_uuid as string,
      kind: r.kind as OutboxRow["kind"],
      url: r.url as string,
      body: r.body as string,
      storageId: r.storage_id as string,
      createdAtMs: r.created_at as number,
    };
  }

  /** Whether `leaseUuid` has an undelivered callback (outboxHead without building the row). */
  hasOutbox(leaseUuid: string): boolean {
    return this.#statements.outboxAny.get(leaseUuid) !== undefined;
  }

  /** Lifecycle observations older than `maxAgeMs` are dropped; results never expire. */
  expireLifecycle(nowMs: number, maxAgeMs: number): number {
    return this.#write(() => this.#statements.expireLifecycle.run(nowMs - maxAgeMs).changes);
  }

  /**
   * Re-attests the storage identity before a callback is sent: the file at our path is
   * still the one we opened and still bound to our storage id.
   */
  attest(): boolean {
    if (!this.db.open) return false;
    if (this.#inode !== undefined) {
      try {
        if (statSync(this.#path).ino !== this.#inode) return false;
      } catch {
        return false;
      }
    }
    const bound = this.#statements.storageId.get() as { value: string } | undefined;
    return bound?.value === this.storageId;
  }

  /** Removes exactly the delivered row (seq + delivery id), never a replacement. */
  removeDelivered(row: OutboxRow): boolean {
    // One statement: atomic alone, so it joins the turn's transaction without a savepoint.
    return this.#database.writeStatement(
      () => this.#statements.deleteOutbox.run(row.seq, row.deliveryId).changes === 1,
    );
  }

  outboxSize(): number {
    return (this.#statements.countOutbox.get() as { n: number }).n;
  }
}

/** The `image_digest` column: a JSON object of strings, or NULL. */
function parsePins(value: unknown): Readonly<Record<string, string>> | undefined {
  if (typeof value !== "string") return undefined;
  const parsed = JSON.parse(value) as unknown;
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
  return Object.freeze(
    Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string")),
  );
}

// ---- row decoding and the journal's SQL, prepared once per connection ----

function toStreak(r: Row): FailureStreak {
  return {
    failures: r.streak_failures as number,
    startedAtMs: (r.streak_started_at as number | null) ?? undefined,
    exhausted: r.streak_exhausted === 1,
    readySinceMs: (r.ready_since as number | null) ?? undefined,
  };
}

/** The head columns of a lease row (`getHead` selects only these; `lease_uuid` is the key asked). */
function toHead(leaseUuid: string, r: Row): LeaseHeadRecord {
  return {
    leaseUuid,
    tenant: r.tenant as string,
    providerUuid: r.provider_uuid as string,
    operationId: r.operation_id as string,
    callbackUrl: r.callback_url as string,
    lifecycleUrl: r.lifecycle_url as string,
    release: r.release as number,
    head: r.head as LeaseHead,
    status: r.status as LeaseStatus,
    failCount: r.fail_count as number,
    createdAtMs: r.created_at as number,
    generation: r.generation as number,
    streak: toStreak(r),
  };
}

function toLease(r: Row): LeaseRecord {
  return {
    ...toHead(r.lease_uuid as string, r),
    items: JSON.parse(r.items as string) as LeaseItem[],
    instances: JSON.parse(r.instances as string) as InstanceSpec[],
    payload: (r.payload as Buffer | null) ?? undefined,
    payloadHash: (r.payload_hash as string | null) ?? undefined,
    image: r.image as string,
    phase: (r.phase as LeasePhase | null) ?? undefined,
    reason: (r.reason as string | null) ?? undefined,
    message: (r.message as string | null) ?? undefined,
    admittedAtMs: r.admitted_at as number,
  };
}

function prepare(db: Database.Database) {
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
    outboxAny: db.prepare("SELECT 1 FROM outbox WHERE lease_uuid = ? LIMIT 1"),
    deleteOutbox: db.prepare("DELETE FROM outbox WHERE seq = ? AND delivery_id = ?"),
    countOutbox: db.prepare("SELECT count(*) AS n FROM outbox"),
    expireLifecycle: db.prepare("DELETE FROM outbox WHERE kind = 'lifecycle' AND created_at < ?"),
    storageId: db.prepare("SELECT value FROM meta WHERE key = 'storage_id'"),
  };
}
