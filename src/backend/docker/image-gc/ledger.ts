import type Database from "better-sqlite3";
import type { Journal } from "../../kit/index.ts";
import type { LedgerImage } from "./policy.ts";

/**
 * The images the backend brought onto the host (journal migration 7), and what the
 * journal says is still in use. Only a ledger image is ever a collection candidate: the
 * proxy's images, the operator's, anything else on the engine is never looked at.
 *
 * The substrate records a use each time a workload is created from an image, possibly
 * before the kit has opened the journal (the first recovery pass runs inside the kit's
 * start): those uses wait in memory until `bind`.
 */

interface Use {
  imageId: string;
  ref: string;
  leaseUuid: string;
  release: number;
  atMs: number;
}

/** Manifests the journal still holds, split by whether a live, pending or retained lease needs them. */
export interface JournalManifests {
  needed: Buffer[];
  history: Buffer[];
}

type Row = Record<string, unknown>;

function prepare(db: Database.Database) {
  return {
    upsertImage: db.prepare(`
      INSERT INTO host_images (image_id, refs, first_seen, last_used) VALUES (?, json_array(?), ?, ?)
      ON CONFLICT (image_id) DO UPDATE SET
        last_used = max(last_used, excluded.last_used),
        refs = CASE WHEN EXISTS (SELECT 1 FROM json_each(refs) WHERE value = json_extract(excluded.refs, '$[0]'))
          THEN refs ELSE json_insert(refs, '$[#]', json_extract(excluded.refs, '$[0]')) END`),
    insertUse: db.prepare(
      "INSERT OR IGNORE INTO host_image_uses (image_id, lease_uuid, release) VALUES (?, ?, ?)",
    ),
    all: db.prepare("SELECT * FROM host_images ORDER BY image_id"),
    touch: db.prepare("UPDATE host_images SET last_used = max(last_used, ?) WHERE image_id = ?"),
    forgetImage: db.prepare("DELETE FROM host_images WHERE image_id = ?"),
    forgetUses: db.prepare("DELETE FROM host_image_uses WHERE image_id = ?"),
    // A lease gone from the leases, releases and retentions tables can never run again.
    pruneUses: db.prepare(`
      DELETE FROM host_image_uses WHERE
        NOT EXISTS (SELECT 1 FROM leases l WHERE l.lease_uuid = host_image_uses.lease_uuid)
        AND NOT EXISTS (SELECT 1 FROM releases r WHERE r.lease_uuid = host_image_uses.lease_uuid)
        AND NOT EXISTS (SELECT 1 FROM retentions t WHERE t.lease_uuid = host_image_uses.lease_uuid)`),
    // Needed: the lease's current release, a release being deployed, any retained lease.
    neededIds: db.prepare(`
      SELECT u.image_id AS id FROM host_image_uses u
        JOIN leases l ON l.lease_uuid = u.lease_uuid AND l.release = u.release
      UNION SELECT u.image_id FROM host_image_uses u
        JOIN releases r ON r.lease_uuid = u.lease_uuid AND r.version = u.release
        WHERE r.status IN ('active', 'deploying')
      UNION SELECT u.image_id FROM host_image_uses u
        JOIN retentions t ON t.lease_uuid = u.lease_uuid`),
    releaseIds: db.prepare(`
      SELECT DISTINCT u.image_id AS id FROM host_image_uses u
        JOIN releases r ON r.lease_uuid = u.lease_uuid AND r.version = u.release`),
    manifests: db.prepare(`
      SELECT payload AS body, 1 AS needed FROM leases WHERE payload IS NOT NULL
      UNION ALL SELECT manifest, status IN ('active', 'deploying') FROM releases WHERE manifest IS NOT NULL
      UNION ALL SELECT payload, 1 FROM retentions WHERE payload IS NOT NULL`),
  };
}

export class ImageLedger {
  #journal: Journal | undefined;
  #statements: ReturnType<typeof prepare> | undefined;
  readonly #waiting: Use[] = [];

  /** Starts writing to the journal; uses recorded before are written now. */
  bind(journal: Journal): void {
    this.#journal = journal;
    this.#statements = prepare(journal.db);
    const waiting = this.#waiting.splice(0);
    journal.transaction(() => {
      for (const use of waiting) this.#write(use);
      // Also where no sweep runs (image_gc_after 0): uses of leases gone for good go at each start.
      this.#bound().statements.pruneUses.run();
    });
  }

  get bound(): boolean {
    return this.#journal !== undefined;
  }

  /** A workload of `leaseUuid` at `release` is being created from `imageId`, asked for as `ref`. */
  used(imageId: string, ref: string, leaseUuid: string, release: number, atMs: number): void {
    const use = { imageId, ref, leaseUuid, release, atMs };
    const journal = this.#journal;
    if (journal === undefined) this.#waiting.push(use);
    else journal.transaction(() => this.#write(use));
  }

  #write(u: Use): void {
    const s = this.#bound().statements;
    s.upsertImage.run(u.imageId, u.ref, u.atMs, u.atMs);
    s.insertUse.run(u.imageId, u.leaseUuid, u.release);
  }

  all(): LedgerImage[] {
    return (this.#bound().statements.all.all() as Row[]).map((r) => ({
      id: r.image_id as string,
      refs: JSON.parse(r.refs as string) as string[],
      firstSeenMs: r.first_seen as number,
      lastUsedMs: r.last_used as number,
    }));
  }

  /** Ledger images found in use: their unused time starts again from `nowMs`. */
  touch(ids: readonly string[], nowMs: number): void {
    const { journal, statements } = this.#bound();
    journal.transaction(() => {
      for (const id of ids) statements.touch.run(nowMs, id);
    });
  }

  /** Images gone from the host (collected, or removed by someone else). */
  forget(ids: readonly string[]): void {
    const { journal, statements } = this.#bound();
    journal.transaction(() => {
      for (const id of ids) {
        statements.forgetImage.run(id);
        statements.forgetUses.run(id);
      }
    });
  }

  /** Image IDs recorded for releases the journal still holds: needed ones, and every one. */
  recordedUses(): { needed: Set<string>; releases: Set<string> } {
    const { journal, statements } = this.#bound();
    journal.transaction(() => statements.pruneUses.run());
    const ids = (rows: unknown[]) => new Set((rows as Row[]).map((r) => r.id as string));
    return { needed: ids(statements.neededIds.all()), releases: ids(statements.releaseIds.all()) };
  }

  /** The manifests of every lease row, release row and retention row. */
  manifests(): JournalManifests {
    const out: JournalManifests = { needed: [], history: [] };
    for (const r of this.#bound().statements.manifests.all() as Row[]) {
      (r.needed === 1 ? out.needed : out.history).push(r.body as Buffer);
    }
    return out;
  }

  #bound(): { journal: Journal; statements: ReturnType<typeof prepare> } {
    if (this.#journal === undefined || this.#statements === undefined)
      throw new Error("the image ledger is not bound to the journal yet");
    return { journal: this.#journal, statements: this.#statements };
  }
}
