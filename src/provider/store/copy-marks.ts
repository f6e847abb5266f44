import { FredError } from "../../core/errors.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import type { BackendFleet } from "./backend-fleet.ts";
import { PLACEMENT_MIGRATIONS } from "./placement-schema.ts";
import { openStore } from "./sqlite.ts";

/**
 * The copies room of the placement store. A copy of a live store (a snapshot or a
 * pre-change backup, written by the online backup API) is marked as one; a store
 * restored from it refuses to open read-write until an operator attests it, because it
 * cannot know of leases placed after the copy was taken.
 */
export class CopyMarks {
  readonly #database: SqliteDatabase;
  readonly #fleet: BackendFleet;

  constructor(database: SqliteDatabase, fleet: BackendFleet) {
    this.#database = database;
    this.#fleet = fleet;
  }

  /** Marks the fresh copy at `path` as a copy taken at `takenAt` (fsynced before it returns). */
  static mark(path: string, takenAt: number): void {
    using database = openStore(path, "placement", PLACEMENT_MIGRATIONS, {
      create: "never",
      durability: "full",
    });
    database.db
      .prepare("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('copy_taken_at', ?)")
      .run(String(takenAt));
  }

  /** When this store's file was copied from a live store (undefined: the original). */
  takenAt(): number | undefined {
    const v = this.#database.db
      .prepare<[], string>("SELECT value FROM store_meta WHERE key = 'copy_taken_at'")
      .pluck()
      .get();
    return v === undefined ? undefined : Number(v);
  }

  /**
   * `--attest-restored-backup`: the operator vouches that this restored copy is the
   * newest there is. The copy mark goes, and every inventory baseline is cleared, so
   * readiness waits for a fresh complete sweep (which also adopts leases the copy missed,
   * by the usual located-on-exactly-one-backend proof).
   */
  attest(now: number): { copy_taken_at: number } {
    const copiedAt = this.takenAt();
    if (copiedAt === undefined) {
      throw new FredError(
        "ERR_PLACEMENT_RESTORED",
        "this placement store is not a restored copy; nothing to attest",
      );
    }
    const db = this.#database.db;
    db.transaction(() => {
      db.prepare("DELETE FROM store_meta WHERE key = 'copy_taken_at'").run();
      db.prepare("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('restore_attested_at', ?)").run(
        String(now),
      );
      this.#fleet.clearBaselines();
    })();
    this.#database.committed();
    return { copy_taken_at: copiedAt };
  }
}
