import type Database from "better-sqlite3";
import { FredError } from "../../core/errors.ts";
import { isUuidV4 } from "../../core/uuid.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import type { Attempt, Placement } from "./placement-records.ts";

/**
 * The backend fleet room of the placement store: every backend the store knows, with the
 * storage identity pinned when it joined (a renamed or replaced backend storage is never
 * mistaken for it), its last complete inventory baseline, and whether an operator retired
 * it as lost. Pins change only offline (`fred placement init|add-backend|retire-backend`),
 * so the names are read once and kept in memory for the hot paths.
 */
export interface InventoryBaseline {
  provisions: number;
  retentions: number;
  at: number;
}

export interface BackendPin {
  name: string;
  storageId: string;
  pinnedAt: number;
  /** Set when an operator retired the backend as lost (`retire-backend --lost`). */
  lostAt: number | undefined;
  baseline: InventoryBaseline | undefined;
}

export interface NewBackendPin {
  name: string;
  storageId: string;
  baseline: Omit<InventoryBaseline, "at">;
}

interface BackendRow {
  name: string;
  storage_id: string;
  pinned_at: number;
  baseline_at: number | null;
  baseline_provisions: number | null;
  baseline_retentions: number | null;
  lost_at: number | null;
}

const INSERT_PIN = `INSERT INTO backends (name, storage_id, pinned_at, baseline_at, baseline_provisions, baseline_retentions)
  VALUES (?, ?, ?, ?, ?, ?)`;

/** A pin's storage ID must be a canonical UUIDv4 (checked before anything is written). */
export function checkStorageId(pin: Pick<NewBackendPin, "name" | "storageId">): void {
  if (!isUuidV4(pin.storageId)) {
    throw new FredError(
      "ERR_PLACEMENT_STORAGE_ID",
      `backend ${pin.name}: storage ID must be a canonical UUIDv4`,
    );
  }
}

function prepare(db: Database.Database) {
  return {
    backends: db.prepare<[], BackendRow>("SELECT * FROM backends ORDER BY name"),
    insertPin: db.prepare<[string, string, number, number, number, number]>(INSERT_PIN),
    recordBaseline: db.prepare<[number, number, number, string]>(
      "UPDATE backends SET baseline_at = ?, baseline_provisions = ?, baseline_retentions = ? WHERE name = ?",
    ),
    // A backend is named while a placement owns or lists it, or an attempt is made at it.
    named: db
      .prepare<{ name: string }, number>(
        `SELECT EXISTS (SELECT 1 FROM placements WHERE owner = @name
                          OR EXISTS (SELECT 1 FROM json_each(candidates) WHERE value = @name))
             OR EXISTS (SELECT 1 FROM attempts WHERE backend = @name)`,
      )
      .pluck(),
  };
}

export class BackendFleet {
  readonly #database: SqliteDatabase;
  readonly #stmt: ReturnType<typeof prepare>;
  /** Pinned backend names; pins change only through init and addBackend(). */
  readonly #names: Set<string>;
  /** Backends retired as lost; changed only offline (retire-backend), so read once. */
  readonly #lost: Set<string>;

  constructor(database: SqliteDatabase) {
    this.#database = database;
    this.#stmt = prepare(database.db);
    const pins = this.#stmt.backends.all();
    this.#names = new Set(pins.map((b) => b.name));
    this.#lost = new Set(pins.filter((b) => b.lost_at !== null).map((b) => b.name));
  }

  /** Pins the fleet of a fresh store (`fred placement init`), inside the caller's transaction. */
  static pinAll(db: Database.Database, pins: readonly NewBackendPin[], now: number): void {
    const insert = db.prepare<[string, string, number, number, number, number]>(INSERT_PIN);
    for (const p of pins)
      insert.run(p.name, p.storageId, now, now, p.baseline.provisions, p.baseline.retentions);
  }

  backends(): BackendPin[] {
    return this.#stmt.backends.all().map((r) => ({
      name: r.name,
      storageId: r.storage_id,
      pinnedAt: r.pinned_at,
      lostAt: r.lost_at ?? undefined,
      baseline:
        r.baseline_at === null
          ? undefined
          : {
              at: r.baseline_at,
              provisions: r.baseline_provisions ?? 0,
              retentions: r.baseline_retentions ?? 0,
            },
    }));
  }

  /** The pinned storage ID per backend name. */
  pins(): Map<string, string> {
    return new Map(this.backends().map((b) => [b.name, b.storageId]));
  }

  /** Whether `backend` is pinned (an attempt may name only a pinned backend). */
  isPinned(backend: string): boolean {
    return this.#names.has(backend);
  }

  /**
   * Pins one more backend (`fred placement add-backend`, providerd stopped): its storage
   * identity and the complete inventory baseline it answered with. A name or storage ID
   * the store already knows is refused: a pin is never replaced.
   */
  addBackend(pin: NewBackendPin, now: number): void {
    checkStorageId(pin);
    const known = this.backends().find((b) => b.name === pin.name || b.storageId === pin.storageId);
    if (known !== undefined) {
      throw new FredError(
        "ERR_PLACEMENT_STORAGE_ID",
        `backend ${known.name} is already pinned (storage ID ${known.storageId}); a pin is never replaced`,
      );
    }
    this.#stmt.insertPin.run(
      pin.name,
      pin.storageId,
      now,
      now,
      pin.baseline.provisions,
      pin.baseline.retentions,
    );
    this.#database.committed();
    this.#names.add(pin.name);
  }

  /** Records a complete inventory projection for one backend. */
  recordBaseline(backend: string, counts: Omit<InventoryBaseline, "at">, now: number): void {
    const r = this.#stmt.recordBaseline.run(now, counts.provisions, counts.retentions, backend);
    if (r.changes !== 1)
      throw new FredError("ERR_PLACEMENT_UNKNOWN_BACKEND", `backend ${backend} is not pinned`);
  }

  /** Forgets every baseline, so readiness waits for a fresh complete sweep (copy attestation). */
  clearBaselines(): void {
    this.#database.db
      .prepare(
        "UPDATE backends SET baseline_at = NULL, baseline_provisions = NULL, baseline_retentions = NULL",
      )
      .run();
  }

  /**
   * True when every configured backend (and no other) is pinned with a baseline. A
   * backend retired as lost is not part of the topology any more, whether listed or not.
   */
  baselineMatches(configured: readonly string[]): boolean {
    const pinned = this.backends().filter((b) => b.lostAt === undefined);
    const names = new Set(configured);
    return pinned.length === names.size && pinned.every((b) => names.has(b.name) && b.baseline !== undefined);
  }

  /** Whether `backend` was retired as lost (its leases' reads answer 410). */
  isLost(backend: string): boolean {
    return this.#lost.has(backend);
  }

  /** Whether any backend was retired as lost: when none was, no lease's record can name one. */
  get anyLost(): boolean {
    return this.#lost.size > 0;
  }

  /**
   * `retire-backend --lost`: the backend's storage is gone for good. Its pin stays while
   * rows name it (they are pruned once their leases ended); nothing is routed to it.
   */
  markLost(backend: string, now: number): void {
    const r = this.#database.db
      .prepare("UPDATE backends SET lost_at = ? WHERE name = ? AND lost_at IS NULL")
      .run(now, backend);
    if (r.changes === 1) this.#database.committed();
    this.#lost.add(backend);
  }

  /**
   * Forgets a retired backend's pin. Only a backend no row names any more: the foreign
   * keys refuse the delete otherwise, so a live lease never loses its owner this way.
   */
  removeBackend(backend: string): void {
    if (this.#stmt.named.get({ name: backend }) === 1) {
      throw new FredError(
        "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
        `backend ${backend} is still named by placement rows`,
      );
    }
    this.#database.db.prepare("DELETE FROM backends WHERE name = ?").run(backend);
    this.#database.committed();
    this.#names.delete(backend);
    this.#lost.delete(backend);
  }
}

/** The placement store's rooms a lease's backend is judged from. */
export interface LeaseRooms {
  store: {
    placement(leaseUuid: string): Placement | undefined;
    attemptFor(leaseUuid: string): Attempt | undefined;
  };
  fleet: Pick<BackendFleet, "anyLost" | "isLost">;
}

/**
 * Whether the lease's record names a backend an operator retired as lost
 * (`fred placement retire-backend --lost`): nothing can be read from it, ever.
 */
export function onLostBackend(rooms: LeaseRooms, leaseUuid: string): boolean {
  const { store, fleet } = rooms;
  // The lost set is in memory and updated by every markLost: the common case reads no row.
  if (!fleet.anyLost) return false;
  const placement = store.placement(leaseUuid);
  const backend =
    placement?.owner ?? (placement === undefined ? store.attemptFor(leaseUuid)?.backend : undefined);
  return backend !== undefined && fleet.isLost(backend);
}
