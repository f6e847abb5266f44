import { createHash } from "node:crypto";
import type { Statement } from "better-sqlite3";
import { FredError } from "../../core/errors.ts";
import { redactManifestPayload } from "../../core/manifest/index.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import { ReadMemo, type SqliteDatabase } from "../../sqlite/index.ts";
import { openStore } from "./sqlite.ts";

/**
 * Uploaded manifests, keyed by lease, stored with the SHA-256 computed at write time.
 * Reads re-hash the bytes, so a corrupted row is reported instead of provisioned.
 * Commits use the WAL group commit: whoever answers on a write (the upload's 202)
 * first awaits `durable()`.
 */
const MIGRATIONS = [
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

interface PayloadRow {
  lease_uuid: string;
  sha256: string;
  payload: Buffer;
  stored_at: number;
  origin: "upload" | "update";
  upload_sha256: string | null;
  holds_secret: 0 | 1;
}

export interface StoredPayload {
  leaseUuid: string;
  payload: Buffer;
  /** Lowercase hex SHA-256 of `payload` (what a provision sends as payload_hash). */
  sha256: string;
  /** The SHA-256 the upload had (the lease's meta_hash): `sha256` unless the bytes were masked since. */
  uploadSha256: string;
  storedAt: number;
  /** True for the manifest of a completed update (its hash is its own, not meta_hash). */
  promoted: boolean;
}

export type PutResult = "stored" | "duplicate";

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export class PayloadStore {
  readonly #database: SqliteDatabase;
  readonly #put: Statement<[string, string, Buffer, number, number]>;
  readonly #get: Statement<[string], PayloadRow>;
  readonly #has: Statement<[string], number>;
  readonly #delete: Statement<[string]>;
  readonly #promote: Statement<[string, string, Buffer, number]>;
  readonly #mask: Statement<[Buffer, string, string]>;
  readonly #leases: Statement<[], string>;
  readonly #count: Statement<[], number>;
  readonly #holdingSecrets: Statement<[], string>;
  readonly #putOnce: (leaseUuid: string, sha256: string, payload: Buffer, now: number) => PutResult;
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
    this.#putOnce = db.transaction((leaseUuid: string, sha256: string, payload: Buffer, now: number) => {
      const existing = this.#get.get(leaseUuid);
      if (existing !== undefined) {
        if ((existing.upload_sha256 ?? existing.sha256) === sha256) return "duplicate";
        throw new FredError("ERR_PAYLOAD_CONFLICT", "a different payload is already stored for this lease");
      }
      this.#stored.changed();
      const secret = redactManifestPayload(payload) !== payload;
      this.#put.run(leaseUuid, sha256, payload, now, secret ? 1 : 0);
      this.#database.committed();
      return "stored";
    });
  }

  /** Opens the store, creating it (mode 0600) on first use; `readonly` opens an existing one beside its writer. */
  static open(path: string, opts: { readonly?: boolean } = {}): PayloadStore {
    const readonly = opts.readonly ?? false;
    return new PayloadStore(
      openStore(path, "payload", MIGRATIONS, {
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

  /**
   * Stores a lease's payload once. The same bytes again are a harmless duplicate; other
   * bytes for a lease that already has a payload are refused (ERR_PAYLOAD_CONFLICT).
   * `expectedSha256` (the lease's meta_hash, hex) must match when given.
   */
  put(leaseUuid: string, payload: Uint8Array, now: number, expectedSha256?: string): PutResult {
    if (!isCanonicalUuid(leaseUuid)) throw new FredError("ERR_PAYLOAD_LEASE", "lease UUID must be canonical");
    const sha256 = sha256Hex(payload);
    if (expectedSha256 !== undefined && expectedSha256.toLowerCase() !== sha256) {
      throw new FredError("ERR_PAYLOAD_HASH_MISMATCH", "payload does not match the lease's meta_hash");
    }
    return this.#putOnce(leaseUuid, sha256, Buffer.from(payload), now);
  }

  /** The stored payload, verified against its recorded hash; undefined when none. */
  get(leaseUuid: string): StoredPayload | undefined {
    const row = this.#get.get(leaseUuid);
    if (row === undefined) return undefined;
    if (sha256Hex(row.payload) !== row.sha256) {
      throw new FredError(
        "ERR_PAYLOAD_CORRUPTED",
        `stored payload for lease ${leaseUuid} fails its hash check`,
      );
    }
    return {
      leaseUuid: row.lease_uuid,
      payload: row.payload,
      sha256: row.sha256,
      uploadSha256: row.upload_sha256 ?? row.sha256,
      storedAt: row.stored_at,
      promoted: row.origin === "update",
    };
  }

  /**
   * Makes `payload` the lease's payload, replacing the uploaded (or an earlier promoted)
   * one: only for the manifest of an update whose exact success the backend reported, so
   * its registry passwords are already in the backend's journal and only the masked form is
   * kept. Idempotent; the caller awaits `durable()` before settling the update.
   */
  promote(leaseUuid: string, payload: Uint8Array, now: number): string {
    if (!isCanonicalUuid(leaseUuid)) throw new FredError("ERR_PAYLOAD_LEASE", "lease UUID must be canonical");
    const masked = Buffer.from(redactManifestPayload(payload));
    const sha256 = sha256Hex(masked);
    this.#stored.changed();
    this.#promote.run(leaseUuid, sha256, masked, now);
    this.#database.committed();
    return sha256;
  }

  /**
   * Replaces the lease's payload by its masked form (registry passwords → the mask), once
   * the backend that ran it holds them. The hash the upload had stays, so the payload still
   * answers for the lease's meta_hash. True when bytes changed; no row, or nothing to mask,
   * only clears the mark.
   */
  mask(leaseUuid: string): boolean {
    const row = this.#get.get(leaseUuid);
    if (row === undefined || row.holds_secret === 0) return false;
    const masked = Buffer.from(redactManifestPayload(row.payload));
    this.#mask.run(masked, sha256Hex(masked), leaseUuid);
    this.#database.committed();
    return !masked.equals(row.payload);
  }

  /** The leases whose stored payload may still hold a registry password (see `mask`). */
  holdingSecrets(): string[] {
    return this.#holdingSecrets.all();
  }

  /** GET status asks on every poll: answered from memory until the next write. */
  has(leaseUuid: string): boolean {
    return this.#stored.get(leaseUuid, this.#readHas);
  }

  readonly #readHas = (leaseUuid: string): boolean => this.#has.get(leaseUuid) !== undefined;

  /** Every lease with a stored payload (the reconciler's payload cleanup reads this). */
  leases(): string[] {
    return this.#leases.all();
  }

  /** How many payloads are held (the fred_payloads_stored gauge, read at scrape time). */
  count(): number {
    return this.#count.get() ?? 0;
  }

  delete(leaseUuid: string): boolean {
    this.#stored.changed();
    return this.#delete.run(leaseUuid).changes === 1;
  }
}
