import { createHash } from "node:crypto";
import { FredError } from "../../core/errors.ts";
import { redactManifestPayload } from "../../core/manifest/index.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";

/**
 * Tenants' uploaded manifests, keyed by lease, each stored with the SHA-256 computed when
 * it was written; reads re-hash the bytes, so a corrupted row is reported instead of
 * provisioned.
 *
 * One contract, two engines (test/provider/store/payload-records-contract.ts runs on both):
 * `PayloadStore` in its own SQLite file and `PgPayloadStore` in providerd's PostgreSQL
 * database. A write is durable once `durable()` resolves after it (SQLite's group commit;
 * a PostgreSQL write is committed when its own promise resolves).
 *
 * Registry passwords (a service's `credentials`) are kept only until the backend has run
 * the lease: `mask` then replaces them (redactManifestPayload), so the backend's journal
 * holds the one real copy.
 */
export interface PayloadRecords {
  /**
   * Stores a lease's payload once. The same bytes again are a harmless duplicate; other
   * bytes for a lease that already has a payload are refused (ERR_PAYLOAD_CONFLICT).
   * `expectedSha256` (the lease's meta_hash, hex) must match when given.
   */
  put(leaseUuid: string, payload: Uint8Array, now: number, expectedSha256?: string): Promise<PutResult>;
  /** The stored payload, verified against its recorded hash (ERR_PAYLOAD_CORRUPTED); undefined when none. */
  get(leaseUuid: string): Promise<StoredPayload | undefined>;
  /**
   * Makes `payload` (masked) the lease's payload over the uploaded or an earlier promoted
   * one: only for the manifest of an update whose exact success the backend reported.
   * Idempotent; resolves to the stored bytes' SHA-256.
   */
  promote(leaseUuid: string, payload: Uint8Array, now: number): Promise<string>;
  /**
   * Replaces the payload by its masked form once the backend that ran it holds the
   * passwords; the upload's hash stays, so the payload still answers for meta_hash. True
   * when bytes changed; no row, or nothing to mask, only clears the mark.
   */
  mask(leaseUuid: string): Promise<boolean>;
  /** The leases whose stored payload may still hold a registry password (see `mask`). */
  holdingSecrets(): Promise<string[]>;
  has(leaseUuid: string): Promise<boolean>;
  /** Every lease with a stored payload, in order (the reconciler's payload cleanup). */
  leases(): Promise<string[]>;
  /** How many payloads are held (the fred_payloads_stored gauge, read at scrape time). */
  count(): Promise<number>;
  delete(leaseUuid: string): Promise<boolean>;
  /** Resolves once every write made so far is on stable storage. */
  durable(): Promise<void>;
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

/** A payload row as both engines keep it. */
export interface PayloadRow {
  lease_uuid: string;
  sha256: string;
  payload: Buffer;
  stored_at: number;
  origin: "upload" | "update";
  upload_sha256: string | null;
}

/** A payload about to be put: the lease id and hash checked, the password mark decided. */
export interface NewPayload {
  sha256: string;
  bytes: Buffer;
  holdsSecret: boolean;
}

/** The checks every `put` makes before it writes. */
export function newPayload(leaseUuid: string, payload: Uint8Array, expectedSha256?: string): NewPayload {
  checkLease(leaseUuid);
  const sha256 = sha256Hex(payload);
  if (expectedSha256 !== undefined && expectedSha256.toLowerCase() !== sha256) {
    throw new FredError("ERR_PAYLOAD_HASH_MISMATCH", "payload does not match the lease's meta_hash");
  }
  return { sha256, bytes: Buffer.from(payload), holdsSecret: redactManifestPayload(payload) !== payload };
}

/** `put` over an existing row: the same upload again is a duplicate, anything else a conflict. */
export function putOverExisting(
  existing: Pick<PayloadRow, "sha256" | "upload_sha256">,
  sha256: string,
): PutResult {
  if ((existing.upload_sha256 ?? existing.sha256) === sha256) return "duplicate";
  throw new FredError("ERR_PAYLOAD_CONFLICT", "a different payload is already stored for this lease");
}

/** The masked form `promote` and `mask` store, with its hash. */
export function maskedPayload(payload: Uint8Array): { bytes: Buffer; sha256: string } {
  const bytes = Buffer.from(redactManifestPayload(payload));
  return { bytes, sha256: sha256Hex(bytes) };
}

export function checkLease(leaseUuid: string): void {
  if (!isCanonicalUuid(leaseUuid)) throw new FredError("ERR_PAYLOAD_LEASE", "lease UUID must be canonical");
}

/** A row read back, verified against the hash recorded when it was written. */
export function verifiedPayload(row: PayloadRow): StoredPayload {
  if (sha256Hex(row.payload) !== row.sha256) {
    throw new FredError(
      "ERR_PAYLOAD_CORRUPTED",
      `stored payload for lease ${row.lease_uuid} fails its hash check`,
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
