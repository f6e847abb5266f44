import type pg from "pg";
import { FredError } from "../../../core/errors.ts";
import type { TransactionRunner } from "../../../pg/transaction.ts";
import {
  checkLease,
  maskedPayload,
  newPayload,
  type PayloadRecords,
  type PayloadRow,
  type PutResult,
  putOverExisting,
  type StoredPayload,
  verifiedPayload,
} from "../payload-records.ts";
import type { TableMap } from "./tables.ts";

export const PAYLOADS_MIGRATION = `CREATE TABLE payloads (
  lease_uuid uuid PRIMARY KEY,
  sha256 text NOT NULL,
  payload bytea NOT NULL,
  stored_at bigint NOT NULL,
  origin text NOT NULL DEFAULT 'upload' CHECK (origin IN ('upload', 'update')),
  upload_sha256 text,
  holds_secret boolean NOT NULL
);
CREATE INDEX payloads_holding_secrets ON payloads (lease_uuid) WHERE holds_secret`;

/** The payloads table of the SQLite file and of PostgreSQL (`fred placement migrate` copies it). */
export const PAYLOADS_TABLE: TableMap = {
  sqlite: "payloads",
  pg: "payloads",
  key: ["lease_uuid"],
  columns: {
    lease_uuid: "uuid",
    sha256: "text",
    payload: "bytea",
    stored_at: "bigint",
    origin: "text",
    upload_sha256: "text",
    holds_secret: "boolean",
  },
};

type PgPayloadRow = Omit<PayloadRow, "stored_at"> & { stored_at: string; holds_secret: boolean };

/**
 * The payload records (payload-records.ts) in providerd's PostgreSQL database. Every write
 * is committed (synchronous commit) when its promise resolves, so `durable()` has nothing
 * to wait for.
 *
 * Any instance stores a tenant's upload, and putting the same hash-checked bytes twice is
 * harmless, so `put` is not fenced; nor are `mask` (it only ever removes passwords) and
 * `delete` (an ended lease's payload, or an upload undone). `promote` replaces one update's
 * manifest with a later one's, so it runs in `fence` (the leader lease's fenced
 * transaction): a deposed leader cannot put an older manifest back.
 *
 * Unlike the SQLite file (secure_delete), PostgreSQL does not overwrite what it deletes: a
 * password `mask` replaced stays in the dead row version until VACUUM reuses its space, and
 * in the write-ahead log and its archives for their retention (docs/operator-guide.md).
 */
export class PgPayloadStore implements PayloadRecords {
  readonly #pool: pg.Pool;
  readonly #fence: TransactionRunner;

  constructor(pool: pg.Pool, fence: TransactionRunner) {
    this.#pool = pool;
    this.#fence = fence;
  }

  async put(
    leaseUuid: string,
    payload: Uint8Array,
    now: number,
    expectedSha256?: string,
  ): Promise<PutResult> {
    const next = newPayload(leaseUuid, payload, expectedSha256);
    // Insert, or read the row that is already there. A row deleted between the two (an
    // upload undone at another instance) sends us round once more.
    for (let round = 0; round < 3; round++) {
      const inserted = await this.#pool.query({
        name: "payload-put",
        text: `INSERT INTO payloads (lease_uuid, sha256, payload, stored_at, holds_secret)
               VALUES ($1, $2, $3, $4, $5) ON CONFLICT (lease_uuid) DO NOTHING`,
        values: [leaseUuid, next.sha256, next.bytes, now, next.holdsSecret],
      });
      if (inserted.rowCount === 1) return "stored";
      const existing = await this.#pool.query<Pick<PayloadRow, "sha256" | "upload_sha256">>({
        name: "payload-hashes",
        text: "SELECT sha256, upload_sha256 FROM payloads WHERE lease_uuid = $1",
        values: [leaseUuid],
      });
      const row = existing.rows[0];
      if (row !== undefined) return putOverExisting(row, next.sha256);
    }
    throw new FredError("ERR_PAYLOAD_CONFLICT", "the lease's payload is being replaced concurrently");
  }

  async get(leaseUuid: string): Promise<StoredPayload | undefined> {
    checkLease(leaseUuid);
    const row = await this.#row(leaseUuid);
    return row === undefined ? undefined : verifiedPayload({ ...row, stored_at: Number(row.stored_at) });
  }

  async promote(leaseUuid: string, payload: Uint8Array, now: number): Promise<string> {
    checkLease(leaseUuid);
    const masked = maskedPayload(payload);
    await this.#fence((client) =>
      client.query({
        name: "payload-promote",
        text: `INSERT INTO payloads (lease_uuid, sha256, payload, stored_at, origin, holds_secret)
               VALUES ($1, $2, $3, $4, 'update', false)
               ON CONFLICT (lease_uuid) DO UPDATE SET sha256 = EXCLUDED.sha256, payload = EXCLUDED.payload,
                 stored_at = EXCLUDED.stored_at, origin = 'update', upload_sha256 = NULL, holds_secret = false`,
        values: [leaseUuid, masked.sha256, masked.bytes, now],
      }),
    );
    return masked.sha256;
  }

  async mask(leaseUuid: string): Promise<boolean> {
    checkLease(leaseUuid);
    const row = await this.#row(leaseUuid);
    if (row === undefined || !row.holds_secret) return false;
    const masked = maskedPayload(row.payload);
    // Only over the bytes just read: a promote in between already stored a masked form.
    const updated = await this.#pool.query({
      name: "payload-mask",
      text: `UPDATE payloads SET upload_sha256 = COALESCE(upload_sha256, sha256), payload = $2, sha256 = $3,
               holds_secret = false WHERE lease_uuid = $1 AND sha256 = $4 AND holds_secret`,
      values: [leaseUuid, masked.bytes, masked.sha256, row.sha256],
    });
    return updated.rowCount === 1 && !masked.bytes.equals(row.payload);
  }

  async holdingSecrets(): Promise<string[]> {
    return this.#column("SELECT lease_uuid FROM payloads WHERE holds_secret ORDER BY lease_uuid");
  }

  async has(leaseUuid: string): Promise<boolean> {
    checkLease(leaseUuid);
    const found = await this.#pool.query({
      name: "payload-has",
      text: "SELECT 1 FROM payloads WHERE lease_uuid = $1",
      values: [leaseUuid],
    });
    return found.rowCount === 1;
  }

  async leases(): Promise<string[]> {
    return this.#column("SELECT lease_uuid FROM payloads ORDER BY lease_uuid");
  }

  async count(): Promise<number> {
    const counted = await this.#pool.query<{ n: string }>("SELECT count(*) AS n FROM payloads");
    return Number(counted.rows[0]?.n ?? 0);
  }

  async delete(leaseUuid: string): Promise<boolean> {
    checkLease(leaseUuid);
    const deleted = await this.#pool.query({
      name: "payload-delete",
      text: "DELETE FROM payloads WHERE lease_uuid = $1",
      values: [leaseUuid],
    });
    return deleted.rowCount === 1;
  }

  /** Every write above is committed when it resolves. */
  async durable(): Promise<void> {}

  async #row(leaseUuid: string): Promise<PgPayloadRow | undefined> {
    const found = await this.#pool.query<PgPayloadRow>({
      name: "payload-get",
      text: "SELECT * FROM payloads WHERE lease_uuid = $1",
      values: [leaseUuid],
    });
    return found.rows[0];
  }

  async #column(text: string): Promise<string[]> {
    const rows = await this.#pool.query<{ lease_uuid: string }>(text);
    return rows.rows.map((r) => r.lease_uuid);
  }
}
