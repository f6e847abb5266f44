import type { Statement } from "better-sqlite3";
import { ReadMemo, type SqliteDatabase } from "../../sqlite/index.ts";
import {
  checkLease,
  maskedPayload,
  type NewPayload,
  newPayload,
  type PayloadRecords,
  type PayloadRow,
  type PutResult,
  putOverExisting,
  type StoredPayload,
  verifiedPayload,
} from "./payload-records.ts";
import { openStore } from "./sqlite.ts";

/**
 * The payload records (payload-records.ts) in their own SQLite file. Commits use the WAL
 * group commit: whoever answers on a write (the upload's 202) first awaits `durable()`.
 * The methods are async for the contract's sake; each runs its statements at once.
 */
export const PAYLOAD_MIGRATIONS: readonly string[] = [
  `CREATE TABLE payloads (
     lease_uuid TEXT PRIMARY KEY,
     sha256     TEXT NOT NULL,
     payload    BLOB NOT NULL,
     stored_at  INTEGER NOT NULL
   ) STRICT;`,
  // 'update': the manifest of a completed update, promoted over the uploaded one. Its
  // SHA-256 no longer equals the lease's on-chain meta_hash, so re-provisioning checks it
  // against the hash recorded here instead.
  `ALTER TABLE payloads ADD COLUMN origin TEXT NOT NULL DEFAULT 'upload' CHECK (origin IN ('upload', 'update'));`,
  // Registry passwords (a service's `credentials`) are kept here only until the backend has
  // run the lease: then the row holds the masked form (redactManifestPayload) and the
  // backend's journal the one real copy. `upload_sha256` keeps the hash the upload had (its
  // meta_hash) once the bytes are masked; `holds_secret` marks rows still to mask (rows from
  // before this migration are checked once).
  `ALTER TABLE payloads ADD COLUMN upload_sha256 TEXT;
   ALTER TABLE payloads ADD COLUMN holds_secret INTEGER NOT NULL DEFAULT 1 CHECK (holds_secret IN (0, 1));
   CREATE INDEX payloads_holding_secrets ON payloads (lease_uuid) WHERE holds_secret = 1;`,
];

interface SqlitePayloadRow extends PayloadRow {
  holds_secret: 0 | 1;
}

export class PayloadStore implements PayloadRecords {
  readonly #database: SqliteDatabase;
  readonly #put: Statement<[string, string, Buffer, number, number]>;
  readonly #get: Statement<[string], SqlitePayloadRow>;
  readonly #has: Statement<[string], number>;
  readonly #delete: Statement<[string]>;
  readonly #promote: Statement<[string, string, Buffer, number]>;
  readonly #mask: Statement<[Buffer, string, string]>;
  readonly #leases: Statement<[], string>;
  readonly #count: Statement<[], number>;
  readonly #holdingSecrets: Statement<[], string>;
  readonly #putOnce: (leaseUuid: string, next: NewPayload, now: number) => PutResult;
  /** `has`'s answers, forgotten by every write (put, promote, delete). */
  readonly #stored: ReadMemo<boolean>;

  private constructor(database: SqliteDatabase) {
    const db = database.db;
    // A masked password must not linger in freed pages of the file (see `mask`).
    if (!db.readonly) db.pragma("secure_delete = ON");
    this.#database = database;
    this.#stored = new ReadMemo<boolean>(db);
    this.#put = db.prepare(
      "INSERT INTO payloads (lease_uuid, sha256, payload, stored_at, holds_secret) VALUES (?, ?, ?, ?, ?)",
    );
    this.#get = db.prepare("SELECT * FROM payloads WHERE lease_uuid = ?");
    // GET status asks on every poll: never read the payload blob just to see it exists.
    this.#has = db.prepare<[string], number>("SELECT 1 FROM payloads WHERE lease_uuid = ?").pluck();
    this.#delete = db.prepare("DELETE FROM payloads WHERE lease_uuid = ?");
    this.#promote = db.prepare(
      `INSERT INTO payloads (lease_uuid, sha256, payload, stored_at, origin, holds_secret)
         VALUES (?, ?, ?, ?, 'update', 0)
       ON CONFLICT(lease_uuid) DO UPDATE SET sha256 = excluded.sha256, payload = excluded.payload,
         stored_at = excluded.stored_at, origin = 'update', upload_sha256 = NULL, holds_secret = 0`,
    );
    this.#mask = db.prepare(
      `UPDATE payloads SET upload_sha256 = COALESCE(upload_sha256, sha256), payload = ?, sha256 = ?,
         holds_secret = 0 WHERE lease_uuid = ?`,
    );
    this.#holdingSecrets = db
      .prepare<[], string>("SELECT lease_uuid FROM payloads WHERE holds_secret = 1 ORDER BY lease_uuid")
      .pluck();
    this.#leases = db.prepare<[], string>("SELECT lease_uuid FROM payloads ORDER BY lease_uuid").pluck();
    this.#count = db.prepare<[], number>("SELECT COUNT(*) FROM payloads").pluck();
    this.#putOnce = db.transaction((leaseUuid: string, next: NewPayload, now: number): PutResult => {
      const existing = this.#get.get(leaseUuid);
      if (existing !== undefined) return putOverExisting(existing, next.sha256);
      this.#stored.changed();
      this.#put.run(leaseUuid, next.sha256, next.bytes, now, next.holdsSecret ? 1 : 0);
      this.#database.committed();
      return "stored";
    });
  }

  /** Opens the store, creating it (mode 0600) on first use; `readonly` opens an existing one beside its writer. */
  static open(path: string, opts: { readonly?: boolean } = {}): PayloadStore {
    const readonly = opts.readonly ?? false;
    return new PayloadStore(
      openStore(path, "payload", PAYLOAD_MIGRATIONS, {
        create: readonly ? "never" : "if-missing",
        durability: "group-commit",
        readonly,
      }),
    );
  }

  close(): void {
    this.#database.close();
  }

  /** The underlying database, for the online backup API (snapshots). */
  get database(): SqliteDatabase {
    return this.#database;
  }

  /** Resolves once every write made so far is on stable storage. */
  durable(): Promise<void> {
    return this.#database.durable();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  async put(
    leaseUuid: string,
    payload: Uint8Array,
    now: number,
    expectedSha256?: string,
  ): Promise<PutResult> {
    return this.#putOnce(leaseUuid, newPayload(leaseUuid, payload, expectedSha256), now);
  }

  async get(leaseUuid: string): Promise<StoredPayload | undefined> {
    checkLease(leaseUuid);
    const row = this.#get.get(leaseUuid);
    return row === undefined ? undefined : verifiedPayload(row);
  }

  /** The caller awaits `durable()` before settling the update. */
  async promote(leaseUuid: string, payload: Uint8Array, now: number): Promise<string> {
    checkLease(leaseUuid);
    const masked = maskedPayload(payload);
    this.#stored.changed();
    this.#promote.run(leaseUuid, masked.sha256, masked.bytes, now);
    this.#database.committed();
    return masked.sha256;
  }

  async mask(leaseUuid: string): Promise<boolean> {
    checkLease(leaseUuid);
    const row = this.#get.get(leaseUuid);
    if (row === undefined || row.holds_secret === 0) return false;
    const masked = maskedPayload(row.payload);
    this.#mask.run(masked.bytes, masked.sha256, leaseUuid);
    this.#database.committed();
    return !masked.bytes.equals(row.payload);
  }

  async holdingSecrets(): Promise<string[]> {
    return this.#holdingSecrets.all();
  }

  /** GET status asks on every poll: answered from memory until the next write. */
  async has(leaseUuid: string): Promise<boolean> {
    checkLease(leaseUuid);
    return this.#stored.get(leaseUuid, this.#readHas);
  }

  readonly #readHas = (leaseUuid: string): boolean => this.#has.get(leaseUuid) !== undefined;

  async leases(): Promise<string[]> {
    return this.#leases.all();
  }

  async count(): Promise<number> {
    return this.#count.get() ?? 0;
  }

  async delete(leaseUuid: string): Promise<boolean> {
    checkLease(leaseUuid);
    this.#stored.changed();
    return this.#delete.run(leaseUuid).changes === 1;
  }
}
