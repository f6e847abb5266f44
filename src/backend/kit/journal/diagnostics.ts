import type Database from "better-sqlite3";

/**
 * The journal's diagnostics table: the last failure of each lease, kept after the lease's
 * workload (and, after a close, its lease row) is gone, until it is older than the
 * configured maximum age. A row holds tenant-safe text only. Rows are written inside the
 * journal's own transactions (the failure settlement and its diagnostic commit together);
 * the methods that run alone take the journal's write wrapper so they count for the group
 * commit like every other write.
 */
/** Container logs captured for a failure (already bounded), by `<service>/<index>`. */
export type CapturedLogs = Record<string, string>;

export interface DiagnosticRecord {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  /** Stable failure category, as the lease row and the callback carried it. */
  reason: string;
  /** Curated, tenant-safe message (the callback's `error`). */
  message: string;
  /** The lease's lifetime failure count including this failure. */
  failCount: number;
  /** Bounded container logs by `<service>/<index>`; undefined until captured. */
  logs: CapturedLogs | undefined;
  /** When the failure was recorded (clock ms): what expiry measures from. */
  createdAtMs: number;
}

type Row = Record<string, unknown>;
type Write = <T>(fn: () => T) => T;

export class DiagnosticsTable {
  readonly #write: Write;
  readonly #statements: ReturnType<typeof prepare>;

  constructor(db: Database.Database, write: Write) {
    this.#write = write;
    this.#statements = prepare(db);
  }

  /** Records (replaces) the lease's failure. Call inside the settling transaction. */
  put(record: DiagnosticRecord): void {
    this.#statements.put.run({
      lease_uuid: record.leaseUuid,
      tenant: record.tenant,
      provider_uuid: record.providerUuid,
      reason: record.reason,
      message: record.message,
      fail_count: record.failCount,
      logs: record.logs === undefined ? null : JSON.stringify(record.logs),
      created_at: record.createdAtMs,
    });
  }

  /** Forgets the lease's failure (it succeeded since). Call inside the settling transaction. */
  drop(leaseUuid: string): void {
    this.#statements.drop.run(leaseUuid);
  }

  get(leaseUuid: string): DiagnosticRecord | undefined {
    const r = this.#statements.get.get(leaseUuid) as Row | undefined;
    if (r === undefined) return undefined;
    return {
      leaseUuid: r.lease_uuid as string,
      tenant: r.tenant as string,
      providerUuid: r.provider_uuid as string,
      reason: r.reason as string,
      message: r.message as string,
      failCount: r.fail_count as number,
      logs: r.logs === null ? undefined : (JSON.parse(r.logs as string) as CapturedLogs),
      createdAtMs: r.created_at as number,
    };
  }

  /**
   * Fills in the logs of exactly the failure recorded at `createdAtMs`, if none were
   * captured yet: a later failure, or logs captured earlier, are never overwritten.
   */
  attachLogs(leaseUuid: string, createdAtMs: number, logs: CapturedLogs): boolean {
    return this.#write(
      () => this.#statements.attachLogs.run(JSON.stringify(logs), leaseUuid, createdAtMs).changes === 1,
    );
  }

  /** Deletes failures recorded before `cutoffMs`; returns how many went. */
  expire(cutoffMs: number): number {
    return this.#write(() => this.#statements.expire.run(cutoffMs).changes);
  }

  count(): number {
    return (this.#statements.count.get() as { n: number }).n;
  }
}

function prepare(db: Database.Database) {
  return {
    put: db.prepare(`
      INSERT INTO diagnostics (lease_uuid, tenant, provider_uuid, reason, message, fail_count, logs, created_at)
      VALUES (@lease_uuid, @tenant, @provider_uuid, @reason, @message, @fail_count, @logs, @created_at)
      ON CONFLICT (lease_uuid) DO UPDATE SET tenant = excluded.tenant, provider_uuid = excluded.provider_uuid,
        reason = excluded.reason, message = excluded.message, fail_count = excluded.fail_count,
        logs = excluded.logs, created_at = excluded.created_at`),
    drop: db.prepare("DELETE FROM diagnostics WHERE lease_uuid = ?"),
    get: db.prepare("SELECT * FROM diagnostics WHERE lease_uuid = ?"),
    attachLogs: db.prepare(
      "UPDATE diagnostics SET logs = ? WHERE lease_uuid = ? AND created_at = ? AND logs IS NULL",
    ),
    expire: db.prepare("DELETE FROM diagnostics WHERE created_at < ?"),
    count: db.prepare("SELECT count(*) AS n FROM diagnostics"),
  };
}
