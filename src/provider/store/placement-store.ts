import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import { BackendFleet, checkStorageId, type NewBackendPin } from "./backend-fleet.ts";
import { CopyMarks } from "./copy-marks.ts";
import { PLACEMENT_MIGRATIONS } from "./placement-schema.ts";
import { Placements } from "./placements.ts";
import { openStore } from "./sqlite.ts";

/**
 * providerd's placement store: ONE SQLite file (one connection, one schema, one WAL and
 * so one fsync for all of it) bound to one provider UUID, with three rooms over it:
 * - `placements`: where each lease lives and the write-ahead attempts (placements.ts);
 * - `fleet`: the pinned backends, lost backends and inventory baselines (backend-fleet.ts);
 * - `copies`: the copy mark of a snapshot or backup and its attestation (copy-marks.ts).
 * A caller takes the room it needs; only whoever opened the store closes it.
 */
export class PlacementStore {
  readonly providerUuid: string;
  /** The underlying database, for the online backup API (snapshots and pre-change backups). */
  readonly database: SqliteDatabase;
  readonly fleet: BackendFleet;
  readonly placements: Placements;
  readonly copies: CopyMarks;

  private constructor(database: SqliteDatabase, providerUuid: string) {
    this.database = database;
    this.providerUuid = providerUuid;
    this.fleet = new BackendFleet(database);
    this.placements = new Placements(database, this.fleet);
    this.copies = new CopyMarks(database, this.fleet);
  }

  /**
   * Creates a fresh store (used only by `fred placement init`): the file must not exist.
   * Pins each backend's storage identity and records its empty-inventory baseline.
   */
  static create(
    path: string,
    providerUuid: string,
    backends: readonly NewBackendPin[],
    now: number,
  ): PlacementStore {
    PlacementStore.checkNew(providerUuid, backends);
    const database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "must-not-exist",
      durability: "group-commit",
    });
    return PlacementStore.initialise(database, providerUuid, backends, now);
  }

  /** What `create` refuses before anything is written: a non-canonical provider, a bad storage id. */
  static checkNew(providerUuid: string, backends: readonly NewBackendPin[]): void {
    if (!isCanonicalUuid(providerUuid)) {
      throw new FredError("ERR_PLACEMENT_PROVIDER", "provider UUID must be canonical");
    }
    for (const b of backends) checkStorageId(b);
  }

  /**
   * Binds a freshly migrated, empty database (a new file, or a mirror on PostgreSQL) to
   * the provider and pins the backends, in one transaction; closes it on failure.
   */
  static initialise(
    database: SqliteDatabase,
    providerUuid: string,
    backends: readonly NewBackendPin[],
    now: number,
  ): PlacementStore {
    const db = database.db;
    try {
      db.transaction(() => {
        db.prepare("INSERT INTO store_meta (key, value) VALUES ('provider_uuid', ?)").run(providerUuid);
        BackendFleet.pinAll(db, backends, now);
      })();
      database.committed();
    } catch (err) {
      database.close();
      throw err;
    }
    return new PlacementStore(database, providerUuid);
  }

  /**
   * Opens an existing store; never creates one. Refuses another provider's file, and a
   * restored copy until it is attested (`restoredCopy: "allow"` lets the attesting tool in).
   * `readonly` reads beside a running providerd (inspection, tests): nothing is
   * migrated, written or checkpointed, and any write throws.
   */
  static open(
    path: string,
    providerUuid: string,
    opts: { readonly?: boolean; restoredCopy?: "refuse" | "allow" } = {},
  ): PlacementStore {
    const database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "never",
      durability: "group-commit",
      readonly: opts.readonly ?? false,
    });
    return PlacementStore.bind(database, providerUuid, `placement store ${path}`, opts);
  }

  /**
   * The store over an opened database (a file, or a mirror on PostgreSQL) once it is
   * shown to be `providerUuid`'s and not an unattested restored copy; closes it otherwise.
   * `label` names it in messages.
   */
  static bind(
    database: SqliteDatabase,
    providerUuid: string,
    label: string,
    opts: { restoredCopy?: "refuse" | "allow" } = {},
  ): PlacementStore {
    try {
      const bound = boundProvider(database);
      if (bound !== providerUuid) {
        throw new FredError(
          "ERR_PLACEMENT_PROVIDER",
          `${label} belongs to provider ${bound ?? "(none)"}, not ${providerUuid}`,
        );
      }
      const store = new PlacementStore(database, providerUuid);
      const copiedAt = store.copies.takenAt();
      if (!database.readonly && copiedAt !== undefined && opts.restoredCopy !== "allow") {
        throw new FredError(
          "ERR_PLACEMENT_RESTORED",
          `${label} is a copy taken at ${new Date(copiedAt).toISOString()} (a restored backup or snapshot); ` +
            "leases placed after it are unrecorded, so attest it first: fred placement repair --config <file> --attest-restored-backup --apply",
        );
      }
      return store;
    } catch (err) {
      database.close();
      throw err;
    }
  }

  /**
   * Opens a snapshot or backup file read-only, whichever provider it is bound to
   * (`fred placement inspect --file`).
   */
  static openCopy(path: string): PlacementStore {
    const database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "never",
      durability: "group-commit",
      readonly: true,
    });
    try {
      return new PlacementStore(database, boundProvider(database) ?? "");
    } catch (err) {
      database.close();
      throw err;
    }
  }

  /** Resolves once every commit made so far, in any room, is on stable storage. */
  durable(): Promise<void> {
    return this.placements.durable();
  }

  /** Syncs and checkpoints the WAL (a writer), then closes. */
  close(): void {
    this.database.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function boundProvider(database: SqliteDatabase): string | undefined {
  return database.db
    .prepare<[], string>("SELECT value FROM store_meta WHERE key = 'provider_uuid'")
    .pluck()
    .get();
}
