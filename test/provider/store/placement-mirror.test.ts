import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type Database from "better-sqlite3";
import type pg from "pg";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { openPostgres } from "../../../src/pg/open.ts";
import { inTransaction } from "../../../src/pg/transaction.ts";
import { LeaderLease } from "../../../src/provider/ha/leader-lease.ts";
import { MaintenanceJournal } from "../../../src/provider/maintenance/journal.ts";
import { type Attempt, PlacementStore } from "../../../src/provider/store/index.ts";
import { PROVIDERD_PG_MIGRATIONS } from "../../../src/provider/store/pg/migrations.ts";
import {
  createPlacementsOnPostgres,
  MIRRORED_TABLES,
  openPlacementsOnPostgres,
  type PlacementDatabase,
} from "../../../src/provider/store/pg/placement-mirror.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { seededRandom } from "../../support/seeded-random.ts";
import { databasePerTest, LEASE_1, LEASE_2, OTHER_PROVIDER, PROVIDER, SID_1, SID_2, T0 } from "./fixture.ts";

const silent = createLogger("placement-mirror-test", "silent");
const BACKENDS = [
  { name: "one", storageId: SID_1, baseline: { provisions: 0, retentions: 0 } },
  { name: "two", storageId: SID_2, baseline: { provisions: 0, retentions: 0 } },
];

const provision = (leaseUuid: string, backend: string, operationId: string, createdAt: number): Attempt => ({
  leaseUuid,
  backend,
  operationId,
  kind: "provision",
  createdAt,
});

/** Every mirrored table of a store, in key order, as SQLite holds it. */
function dump(db: Database.Database): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const t of MIRRORED_TABLES) {
    out[t.sqlite] = db.prepare(`SELECT * FROM main.${t.sqlite} ORDER BY ${t.key.join(", ")}`).all();
  }
  return out;
}

/** The kinds of row the seeded run must have compared, each by how a dump shows it. */
const ROW_KINDS: Record<string, (d: Record<string, Record<string, unknown>[]>) => boolean> = {
  "a placement": (d) => d.placements!.length > 0,
  "a maintenance command": (d) => d.maintenance!.length > 0,
  "a retained row": (d) => d.placements!.some((p) => p.retained_at !== null),
  "a quarantined row": (d) => d.placements!.some((p) => p.state === "conflict"),
  "a settled command": (d) => d.maintenance!.some((m) => m.phase === "settled"),
  "a recorded baseline": (d) => d.backends!.some((b) => b.baseline_provisions !== 0),
};

describe("placement store on PostgreSQL (the mirror)", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  const pools: pg.Pool[] = [];
  const files = databasePerTest("fred-mirror-");
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const pool of pools) await pool.end().catch(() => {});
    server?.stop();
  });

  let n = 0;
  /** A new database with providerd's schema; every shipment in a plain transaction. */
  async function database(): Promise<PlacementDatabase & { url: string }> {
    const url = server.createDatabase(`mirror_${++n}`);
    const pool = await openPostgres({ url, label: "test store", migrations: PROVIDERD_PG_MIGRATIONS });
    pools.push(pool);
    return { url, pool, fence: (work) => inTransaction(pool, work) };
  }

  /** The store as another instance would load it now. */
  async function reloaded(target: PlacementDatabase): Promise<Record<string, unknown[]>> {
    using copy = await openPlacementsOnPostgres(target, PROVIDER);
    return dump(copy.placements.db);
  }

  it("the PostgreSQL tables have exactly the mirrored columns, with their types and keys", async () => {
    const { pool } = await database();
    for (const t of MIRRORED_TABLES) {
      const { rows } = await pool.query<{ column_name: string; data_type: string }>(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 ORDER BY column_name",
        [t.pg],
      );
      const expected = Object.entries(t.columns)
        .map(([name, type]) => ({ column_name: name, data_type: type === "bytea" ? "bytea" : type }))
        .sort((a, b) => a.column_name.localeCompare(b.column_name));
      assert.deepEqual(rows, expected, t.pg);
      const key = await pool.query<{ attname: string }>(
        `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
         WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
        [t.pg],
      );
      assert.deepEqual(
        key.rows.map((r) => r.attname),
        t.key,
        `${t.pg} primary key`,
      );
    }
  });

  it("a seeded run of every room's writes: PostgreSQL holds what a file store holds after each durable()", async () => {
    const target = await database();
    const covered = new Set<string>();
    const seed = Number(process.env.MIRROR_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`placement mirror: seed ${seed} (MIRROR_SEED=${seed} replays it)`);
    const random = seededRandom(seed);
    using file = PlacementStore.create(files.path, PROVIDER, BACKENDS, T0);
    using mirror = await createPlacementsOnPostgres(target, PROVIDER, BACKENDS, T0);
    const leases = Array.from(
      { length: 12 },
      (_, i) => `0190f3a2-7c1e-7000-8000-${(0x100 + i).toString(16).padStart(12, "0")}`,
    );
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const opId = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
    const hex = (len: number) =>
      Array.from({ length: len }, () => Math.floor(random() * 16).toString(16)).join("");

    let now = T0;
    for (let step = 0; step < 400; step++) {
      now += 1_000;
      const lease = pick(leases);
      const backend = pick(["one", "two"]);
      const roll = random();
      // The same call on both stores, with the same answer (`write` draws no random numbers).
      const onBoth = (write: (s: PlacementStore) => unknown) => {
        let expected: unknown;
        try {
          expected = write(file);
        } catch (err) {
          // A refusal is the same on both (and changes nothing on either: the dumps say).
          assert.throws(() => write(mirror), { message: (err as Error).message }, `step ${step}`);
          return;
        }
        assert.deepEqual(write(mirror), expected, `step ${step}`);
      };
      if (roll < 0.3) {
        const op = opId();
        onBoth((s) => s.placements.recordAttempt(provision(lease, backend, op, now)));
      } else if (roll < 0.5) {
        const a = file.placements.attemptFor(lease);
        if (a !== undefined) {
          const outcome = random() < 0.8 ? "success" : "failed";
          onBoth((s) => s.placements.settleOperation(lease, a.operationId, outcome, now));
        }
      } else if (roll < 0.55) {
        const a = file.placements.attemptFor(lease);
        if (a !== undefined) onBoth((s) => s.placements.clearRefusedAttempt(lease, a.operationId));
      } else if (roll < 0.6) {
        onBoth((s) => s.placements.quarantine(lease, ["one", "two"], now));
      } else if (roll < 0.65) {
        onBoth((s) => s.placements.prunePlacement(lease));
      } else if (roll < 0.72) {
        // Retention applies to a placed lease: one with an owner, when there is one.
        const owned = leases.filter((l) => file.placements.placement(l)?.owner !== undefined);
        const target = owned.length > 0 ? pick(owned) : lease;
        const p = file.placements.placement(target);
        if (p?.owner !== undefined) {
          const sid = p.owner === "one" ? SID_1 : SID_2;
          onBoth((s) => s.placements.retained.mark(target, p.owner!, sid, now));
        }
      } else if (roll < 0.76) {
        const listed = random() < 0.5;
        onBoth((s) => s.placements.retained.sweepSaw(lease, listed));
      } else if (roll < 0.8) {
        const counts = { provisions: Math.floor(random() * 50), retentions: Math.floor(random() * 5) };
        onBoth((s) => s.fleet.recordBaseline(backend, counts, now));
      } else if (roll < 0.9) {
        const key = `key-${Math.floor(random() * 4)}`;
        const id = opId();
        const lifecycleId = opId();
        const payload = random() < 0.5 ? undefined : Buffer.from(`{"image":"app:${step}"}`);
        onBoth(
          (s) =>
            MaintenanceJournal.of(s.placements).admit({
              leaseUuid: lease,
              key,
              maintenanceId: id,
              tenant: "manifest1tenant",
              kind: payload === undefined ? "restart" : "update",
              payload,
              backend,
              lifecycleId,
              nowMs: now,
            }).kind,
        );
      } else if (roll < 0.95) {
        const pending = MaintenanceJournal.of(file.placements).pending(lease);
        if (pending !== undefined) {
          onBoth((s) =>
            MaintenanceJournal.of(s.placements).settle(
              lease,
              pending.maintenanceId,
              "succeeded",
              { status: 200 },
              now,
            ),
          );
        }
      } else {
        // A batch that throws after its writes: rolled back on both, nothing shipped.
        const op = opId();
        onBoth((s) =>
          s.placements.batch(() => {
            s.placements.recordAttempt(provision(lease, backend, op, now));
            throw new Error("rolled back");
          }),
        );
      }
      // Compared every 50 steps, and as soon as a kind of row shows for the first time (a
      // later step may change it again before the next fiftieth).
      const state = dump(file.placements.db) as Record<string, Record<string, unknown>[]>;
      const kinds = Object.entries(ROW_KINDS)
        .filter(([, holds]) => holds(state))
        .map(([kind]) => kind);
      if (step % 50 === 49 || step === 399 || kinds.some((k) => !covered.has(k))) {
        await mirror.durable();
        assert.deepEqual(dump(mirror.placements.db), state, `mirror at step ${step}`);
        assert.deepEqual(await reloaded(target), state, `PostgreSQL at step ${step}`);
        for (const kind of kinds) covered.add(kind);
      }
    }
    // The comparisons above met every kind of row (a seed's end state alone need not hold
    // them all).
    for (const kind of Object.keys(ROW_KINDS)) assert.ok(covered.has(kind), `${kind}: never compared`);
  });

  it("a write made while PostgreSQL is down is refused to durable(), and sent by the next one", async () => {
    const target = await database();
    using store = await createPlacementsOnPostgres(target, PROVIDER, BACKENDS, T0);
    server.halt();
    try {
      store.placements.recordAttempt(provision(LEASE_1, "one", randomUUID(), T0));
      await assert.rejects(store.durable(), { code: "ERR_STORE_UNREACHABLE" });
    } finally {
      server.start();
    }
    await store.durable();
    assert.deepEqual(await reloaded(target), dump(store.placements.db));
    assert.equal((await reloaded(target)).attempts?.length, 1);
  });

  it("a deposed leader commits nothing: durable() and every later write are refused (ERR_NOT_LEADER)", async () => {
    const { pool } = await database();
    const lease = new LeaderLease({
      pool,
      providerUuid: PROVIDER,
      instance: randomUUID(),
      clock: systemClock,
      logger: silent,
    });
    await lease.tryNow();
    const target: PlacementDatabase = { pool, fence: (work) => lease.fenced(work) };
    using store = await createPlacementsOnPostgres(target, PROVIDER, BACKENDS, T0);
    const before = await reloaded(target);
    await pool.query("UPDATE fred_leader SET holder = 'someone-else', generation = generation + 1");
    store.placements.recordAttempt(provision(LEASE_1, "one", randomUUID(), T0));
    await assert.rejects(store.durable(), { code: "ERR_NOT_LEADER" });
    assert.throws(
      () =>
        store.placements.recordAttempts([
          { leaseUuid: LEASE_2, backend: "one", operationId: randomUUID(), kind: "provision", createdAt: T0 },
        ]),
      { code: "ERR_NOT_LEADER" },
    );
    // A single statement outside write() is refused by SQLite (the mirror went read-only).
    assert.throws(() => store.placements.quarantine(LEASE_1, ["one", "two"], T0), /readonly|read-only/);
    await assert.rejects(store.durable(), { code: "ERR_NOT_LEADER" });
    assert.deepEqual(await reloaded(target), before, "PostgreSQL holds what it held before the takeover");
    await lease.stop();
  });

  it("init refuses a database that holds a store; open refuses an empty one and another provider's", async () => {
    const target = await database();
    await assert.rejects(openPlacementsOnPostgres(target, PROVIDER), { code: "ERR_STORE_MISSING" });
    using store = await createPlacementsOnPostgres(target, PROVIDER, BACKENDS, T0);
    await assert.rejects(createPlacementsOnPostgres(target, PROVIDER, BACKENDS, T0), {
      code: "ERR_STORE_EXISTS",
    });
    await assert.rejects(openPlacementsOnPostgres(target, OTHER_PROVIDER), {
      code: "ERR_PLACEMENT_PROVIDER",
    });
    await assert.rejects(createPlacementsOnPostgres(target, "not-a-uuid", BACKENDS, T0), {
      code: "ERR_PLACEMENT_PROVIDER",
    });
    assert.equal(store.fleet.backends().length, 2);
  });
});
