// providerd's maintenance journal, and the admission stamp each of its commands carries.
import type Database from "better-sqlite3";
import { ReadMemo } from "../../sqlite/index.ts";
import type { Placements } from "../store/index.ts";
import { sha256Hex } from "../store/index.ts";

/**
 * providerd's durable maintenance journal, kept in the placement store's file (migration 3)
 * so that its writes join the store's transactions and fsyncs. A command moves
 *   admitted → accepted (the backend answered 202) → settled, or, for an update whose
 *   exact success arrived, admitted|accepted → confirmed (promotion authorized) → settled
 * once its manifest is the lease's payload. A row is never deleted while unsettled; a
 * settled row is the command's receipt, replayed to an exact retry, until 1,024 newer
 * commands of its lease push it out or the lease's placement is gone.
 */
export type CommandKind = "restart" | "update";
export type Phase = "admitted" | "accepted" | "confirmed" | "settled";
export type Outcome = "succeeded" | "failed" | "refused" | "expired" | "ended";

/** The answer a settled command replays (the 202 of a success is rebuilt from its kind). */
export interface StoredAnswer {
  status: number;
  error?: string;
  reason?: string;
}

export interface Command {
  leaseUuid: string;
  key: string;
  maintenanceId: string;
  tenant: string;
  kind: CommandKind;
  payload: Buffer | undefined;
  payloadSha256: string | undefined;
  admittedAtUs: number;
  backend: string;
  lifecycleId: string;
  phase: Phase;
  outcome: Outcome | undefined;
  answer: StoredAnswer | undefined;
}

export interface Limits {
  /** Unsettled commands, all tenants (1,024). */
  commands: number;
  /** Content of unsettled commands in bytes (64 MiB). */
  bytes: number;
  /** What a tenant with pending work must leave for one without: commands, bytes (1, 2 MiB). */
  reserveCommands: number;
  reserveBytes: number;
  /** Receipts kept per lease (1,024). */
  receipts: number;
}

export const DEFAULT_LIMITS: Limits = {
  commands: 1_024,
  bytes: 64 * 1024 * 1024,
  reserveCommands: 1,
  reserveBytes: 2 * 1024 * 1024,
  receipts: 1_024,
};

/** Per command, on top of its key and payload: room for the phases it will still write. */
export const PHASE_ALLOWANCE = 512;

export interface Admission {
  leaseUuid: string;
  key: string;
  maintenanceId: string;
  tenant: string;
  kind: CommandKind;
  payload: Buffer | undefined;
  backend: string;
  lifecycleId: string;
  nowMs: number;
}

export type AdmitResult =
  | { kind: "admitted"; command: Command }
  | { kind: "existing"; command: Command }
  | { kind: "busy" }
  | { kind: "reserved" }
  | { kind: "full" };

interface Row {
  lease_uuid: string;
  command_key: string;
  maintenance_id: string;
  tenant: string;
  kind: CommandKind;
  payload: Buffer | null;
  payload_sha256: string | null;
  admitted_at_us: number;
  backend: string;
  lifecycle_id: string;
  phase: Phase;
  outcome: Outcome | null;
  answer_status: number | null;
  answer_error: string | null;
  answer_reason: string | null;
}

function toCommand(r: Row): Command {
  let answer: StoredAnswer | undefined;
  if (r.answer_status !== null) {
    answer = { status: r.answer_status };
    if (r.answer_error !== null) answer.error = r.answer_error;
    if (r.answer_reason !== null) answer.reason = r.answer_reason;
  }
  return {
    leaseUuid: r.lease_uuid,
    key: r.command_key,
    maintenanceId: r.maintenance_id,
    tenant: r.tenant,
    kind: r.kind,
    payload: r.payload ?? undefined,
    payloadSha256: r.payload_sha256 ?? undefined,
    admittedAtUs: r.admitted_at_us,
    backend: r.backend,
    lifecycleId: r.lifecycle_id,
    phase: r.phase,
    outcome: r.outcome ?? undefined,
    answer,
  };
}

/** A lease's newest command, in brief: what status reads ask on every poll. */
export interface Newest {
  maintenanceId: string;
  kind: CommandKind;
  phase: Phase;
}

/**
 * Every statement the journal runs, prepared once per connection. Those that write the
 * table tell `memo` first (the memo `newest` answers from).
 */
function prepare(db: Database.Database, memo: ReadMemo<Newest | null>) {
  const unsettled = "phase <> 'settled'";
  return {
    byKey: db.prepare<[string, string], Row>(
      "SELECT * FROM maintenance WHERE lease_uuid = ? AND command_key = ?",
    ),
    byId: db.prepare<[string, string], Row>(
      "SELECT * FROM maintenance WHERE lease_uuid = ? AND maintenance_id = ?",
    ),
    pendingOf: db.prepare<[string], Row>(`SELECT * FROM maintenance WHERE lease_uuid = ? AND ${unsettled}`),
    unsettled: db.prepare<[], Row>(`SELECT * FROM maintenance WHERE ${unsettled} ORDER BY admitted_at_us`),
    totals: db.prepare<[], { n: number; bytes: number }>(
      `SELECT count(*) AS n, coalesce(sum(content_bytes), 0) AS bytes FROM maintenance WHERE ${unsettled}`,
    ),
    tenantBusy: db
      .prepare<[string], number>(`SELECT 1 FROM maintenance WHERE tenant = ? AND ${unsettled} LIMIT 1`)
      .pluck(),
    newestAt: db
      .prepare<[string], number | null>("SELECT max(admitted_at_us) FROM maintenance WHERE lease_uuid = ?")
      .pluck(),
    newest: db.prepare<[string], { maintenance_id: string; kind: CommandKind; phase: Phase }>(
      `SELECT maintenance_id, kind, phase FROM maintenance WHERE lease_uuid = ?
       ORDER BY admitted_at_us DESC LIMIT 1`,
    ),
    insert: memo.writes(
      db.prepare<[Record<string, unknown>]>(
        `INSERT INTO maintenance (lease_uuid, command_key, maintenance_id, tenant, kind, payload,
           payload_sha256, admitted_at_us, backend, lifecycle_id, phase, content_bytes)
         VALUES (@lease, @key, @id, @tenant, @kind, @payload, @sha, @at, @backend, @lifecycle, 'admitted', @bytes)`,
      ),
    ),
    evict: memo.writes(
      db.prepare<[string, string, number]>(
        `DELETE FROM maintenance WHERE lease_uuid = ? AND phase = 'settled' AND admitted_at_us IN (
           SELECT admitted_at_us FROM maintenance WHERE lease_uuid = ? AND phase = 'settled'
           ORDER BY admitted_at_us LIMIT ?)`,
      ),
    ),
    count: db.prepare<[string], number>("SELECT count(*) FROM maintenance WHERE lease_uuid = ?").pluck(),
    setPhase: memo.writes(
      db.prepare<[Phase, string, string, Phase]>(
        "UPDATE maintenance SET phase = ? WHERE lease_uuid = ? AND maintenance_id = ? AND phase = ?",
      ),
    ),
    settle: memo.writes(
      db.prepare<[Record<string, unknown>]>(
        `UPDATE maintenance SET phase = 'settled', outcome = @outcome, answer_status = @status,
           answer_error = @error, answer_reason = @reason, payload = NULL, settled_at = @now
         WHERE lease_uuid = @lease AND maintenance_id = @id AND ${unsettled}`,
      ),
    ),
    leases: db.prepare<[], string>("SELECT DISTINCT lease_uuid FROM maintenance").pluck(),
    forget: memo.writes(
      db.prepare<[string]>(`DELETE FROM maintenance WHERE lease_uuid = ? AND NOT (${unsettled})`),
    ),
  };
}

const journals = new WeakMap<Placements, MaintenanceJournal>();

export class MaintenanceJournal {
  readonly #store: Placements;
  readonly #stmt: ReturnType<typeof prepare>;
  readonly #tx: <T>(fn: () => T) => T;
  /** `newest`'s answers, forgotten by every write of the table. */
  readonly #newest: ReadMemo<Newest | null>;

  private constructor(store: Placements) {
    this.#store = store;
    this.#newest = new ReadMemo<Newest | null>(store.db);
    this.#stmt = prepare(store.db, this.#newest);
    this.#tx = (fn) => store.batch(fn);
  }

  /** The journal of `store` (statements are prepared once per connection). */
  static of(store: Placements): MaintenanceJournal {
    let journal = journals.get(store);
    if (journal === undefined) {
      journal = new MaintenanceJournal(store);
      journals.set(store, journal);
    }
    return journal;
  }

  /** Resolves once every journal write so far is on disk (the store's one fsync). */
  durable(): Promise<void> {
    return this.#store.durable();
  }

  /**
   * Records a new command, or says why not: the same key again (`existing`, whether or not
   * it is the same command — the caller compares with `sameCommand`), another command of the
   * lease still unsettled (`busy`), the tenant reserve (`reserved`) or the shared budget (`full`).
   */
  admit(a: Admission, limits: Limits = DEFAULT_LIMITS): AdmitResult {
    return this.#tx((): AdmitResult => {
      const existing = this.#stmt.byKey.get(a.leaseUuid, a.key);
      if (existing !== undefined) return { kind: "existing", command: toCommand(existing) };
      if (this.#stmt.pendingOf.get(a.leaseUuid) !== undefined) return { kind: "busy" };
      const bytes = a.key.length + (a.payload?.length ?? 0) + PHASE_ALLOWANCE;
      const totals = this.#stmt.totals.get()!;
      const L = limits;
      const fits = (commands: number, budget: number) =>
        totals.n + 1 <= commands && totals.bytes + bytes <= budget;
      if (!fits(L.commands, L.bytes)) return { kind: "full" };
      if (
        this.#stmt.tenantBusy.get(a.tenant) !== undefined &&
        !fits(L.commands - L.reserveCommands, L.bytes - L.reserveBytes)
      ) {
        return { kind: "reserved" };
      }
      const at = nextAdmittedAt(a.nowMs, this.#stmt.newestAt.get(a.leaseUuid) ?? undefined);
      this.#stmt.insert.run({
        lease: a.leaseUuid,
        key: a.key,
        id: a.maintenanceId,
        tenant: a.tenant,
        kind: a.kind,
        payload: a.payload ?? null,
        sha: a.payload === undefined ? null : sha256Hex(a.payload),
        at,
        backend: a.backend,
        lifecycle: a.lifecycleId,
        bytes,
      });
      const over = this.#stmt.count.get(a.leaseUuid)! - L.receipts;
      if (over > 0) this.#stmt.evict.run(a.leaseUuid, a.leaseUuid, over);
      return { kind: "admitted", command: toCommand(this.#stmt.byKey.get(a.leaseUuid, a.key)!) };
    });
  }

  /** The backend answered 202: admitted → accepted. False when the command moved on already. */
  accepted(leaseUuid: string, maintenanceId: string): boolean {
    return this.#stmt.setPhase.run("accepted", leaseUuid, maintenanceId, "admitted").changes === 1;
  }

  /**
   * An exact successful update completion: the pending manifest may now become the lease's
   * payload. From admitted too (the 202 may have been lost while the backend ran it).
   */
  confirmed(leaseUuid: string, maintenanceId: string): boolean {
    return this.#tx(
      () =>
        this.#stmt.setPhase.run("confirmed", leaseUuid, maintenanceId, "accepted").changes === 1 ||
        this.#stmt.setPhase.run("confirmed", leaseUuid, maintenanceId, "admitted").changes === 1,
    );
  }

  /** Settles an unsettled command with its final answer; its pending manifest is dropped. */
  settle(leaseUuid: string, maintenanceId: string, outcome: Outcome, answer: StoredAnswer, nowMs: number) {
    const r = this.#stmt.settle.run({
      lease: leaseUuid,
      id: maintenanceId,
      outcome,
      status: answer.status,
      error: answer.error ?? null,
      reason: answer.reason ?? null,
      now: nowMs,
    });
    return r.changes === 1;
  }

  byKey(leaseUuid: string, key: string): Command | undefined {
    const r = this.#stmt.byKey.get(leaseUuid, key);
    return r === undefined ? undefined : toCommand(r);
  }

  byMaintenanceId(leaseUuid: string, maintenanceId: string): Command | undefined {
    const r = this.#stmt.byId.get(leaseUuid, maintenanceId);
    return r === undefined ? undefined : toCommand(r);
  }

  /** The lease's unsettled command (at most one), if any. */
  pending(leaseUuid: string): Command | undefined {
    const r = this.#stmt.pendingOf.get(leaseUuid);
    return r === undefined ? undefined : toCommand(r);
  }

  /**
   * The lease's newest command, if any: GET status asks on every poll, so it is answered
   * from memory until the journal is written. A lease has at most one unsettled command and
   * nothing is admitted beside it, so when one is unsettled, it is this one.
   */
  newest(leaseUuid: string): Newest | undefined {
    return this.#newest.get(leaseUuid, this.#readNewest) ?? undefined;
  }

  /** The kind of the lease's unsettled command, if any (from `newest`). */
  pendingKind(leaseUuid: string): CommandKind | undefined {
    const n = this.newest(leaseUuid);
    return n === undefined || n.phase === "settled" ? undefined : n.kind;
  }

  readonly #readNewest = (leaseUuid: string): Newest | null => {
    const r = this.#stmt.newest.get(leaseUuid);
    return r === undefined ? null : { maintenanceId: r.maintenance_id, kind: r.kind, phase: r.phase };
  };

  /** Every unsettled command, oldest first (the recovery pass). */
  unsettled(): Command[] {
    return this.#stmt.unsettled.all().map(toCommand);
  }

  /** Leases that have journal rows. */
  leases(): string[] {
    return this.#stmt.leases.all();
  }

  /** Drops a lease's receipts (its placement is gone); unsettled commands stay. */
  forget(leaseUuid: string): number {
    return this.#stmt.forget.run(leaseUuid).changes;
  }

  totals(): { commands: number; bytes: number } {
    const t = this.#stmt.totals.get()!;
    return { commands: t.n, bytes: t.bytes };
  }
}

/** True when `c` is the command a request with this kind and payload asks for. */
export function sameCommand(c: Command, kind: CommandKind, payload: Buffer | undefined): boolean {
  if (c.kind !== kind) return false;
  if (kind === "restart") return true;
  return payload !== undefined && c.payloadSha256 === sha256Hex(payload);
}

/**
 * The admission stamp of a maintenance command: microseconds since the epoch in the
 * journal, RFC 3339 UTC with six fraction digits on the wire ("2024-01-16T14:00:00.000001Z").
 * A backend echoes it as maintenance_admitted_at, possibly written with another number of
 * fraction digits, so the echo is compared as an instant, never as text.
 */
export function formatAdmittedAt(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString(); // …T14:00:00.000Z
  const micros = String(us % 1_000_000).padStart(6, "0");
  return `${iso.slice(0, 19)}.${micros}Z`;
}

const STAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

/** The instant of an RFC 3339 UTC stamp in nanoseconds; undefined when it is not one. */
export function instantNs(text: string): bigint | undefined {
  const m = STAMP.exec(text);
  if (m === null) return undefined;
  const seconds = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(seconds)) return undefined;
  const fraction = (m[2] ?? "").padEnd(9, "0");
  return BigInt(seconds) * 1_000_000n + BigInt(fraction);
}

/** True when `echo` names exactly the instant `us`. */
export function sameInstant(us: number, echo: string): boolean {
  return instantNs(echo) === BigInt(us) * 1000n;
}

/** The next stamp of a lease: now, or one microsecond after its newest command. */
export function nextAdmittedAt(nowMs: number, newestUs: number | undefined): number {
  const now = nowMs * 1000;
  return newestUs === undefined || now > newestUs ? now : newestUs + 1;
}
