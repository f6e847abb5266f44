import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { openPostgres } from "../../../src/pg/open.ts";
import { LeaderLease } from "../../../src/provider/ha/leader-lease.ts";
import { initPlacementStore, inspectPlacementStore } from "../../../src/provider/placement/init.ts";
import { addBackend } from "../../../src/provider/placement/membership.ts";
import { migrateToPostgres } from "../../../src/provider/placement/migrate.ts";
import { repairPlacements } from "../../../src/provider/placement/repair.ts";
import { retireBackend } from "../../../src/provider/placement/retire.ts";
import { PROVIDERD_PG_MIGRATIONS } from "../../../src/provider/store/index.ts";
import { type Launched, launchFred } from "../../support/index.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { LEASE_2, SID_1, SID_2 } from "../store/fixture.ts";
import { filledProvider, postgresConfigOf } from "./filled-provider.ts";

/**
 * The placement tools on a provider whose stores are in PostgreSQL (issue #36), against a
 * real cluster: init, inspect, repair, retire-backend and add-backend (init's and
 * add-backend's fleet read from real mock backend processes) work on the database as on
 * the file;
 * a tool that changes the store holds the leader lease for its run, so it refuses while an
 * instance leads and no instance can lead while it writes.
 */
const root = mkdtempSync(join(tmpdir(), "fred-placement-tools-pg-"));
const quiet = () => {};

describe("placement tools with database_url", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  let databases = 0;
  before(async () => {
    server = await startPostgres();
  });
  after(() => {
    server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  /** A filled provider's files, and the same provider moved into a fresh database. */
  async function movedProvider() {
    const files = await filledProvider(root);
    const url = server.createDatabase(`tools_${++databases}`);
    await migrateToPostgres(files, url, undefined, quiet);
    return { files, url, onPostgres: postgresConfigOf(files, url) };
  }

  it("inspect reads the store in PostgreSQL: the document the files give", async () => {
    const { files, url, onPostgres } = await movedProvider();
    const fromFiles = await inspectPlacementStore(files);
    const fromDatabase = await inspectPlacementStore(onPostgres);
    assert.equal(fromDatabase.placement_store, url);
    assert.deepEqual({ ...fromDatabase, placement_store: "" }, { ...fromFiles, placement_store: "" });
    assert.ok((fromDatabase.placements as unknown[]).length >= 2);
  });

  it("inspect migrates nothing: a database without this release's schema is refused as it is", async () => {
    const files = await filledProvider(root);
    const url = server.createDatabase(`tools_${++databases}`);
    await assert.rejects(inspectPlacementStore(postgresConfigOf(files, url)), {
      code: "ERR_STORE_OPEN",
      message: /holds no providerd schema/,
    });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT to_regclass('fred_schema') AS t");
      assert.equal(rows[0].t, null, "no table was created");
    } finally {
      await client.end();
    }
  });

  it("repair's dry run finds what it finds in the files", async () => {
    const { files, onPostgres } = await movedProvider();
    const deps = { clock: systemClock };
    const fromFiles = await repairPlacements(files, false, deps);
    const fromDatabase = await repairPlacements(onPostgres, false, deps);
    assert.ok(fromFiles.findings.length > 0, "the fixture holds a conflict and an attempt on a backend gone");
    assert.deepEqual(fromDatabase.findings, fromFiles.findings);
    assert.equal(fromDatabase.backup, null);
  });

  it("retire-backend --lost marks the pin lost in PostgreSQL, after a backup in state_dir; refused while an instance leads", async () => {
    const { onPostgres, url } = await movedProvider();
    const pool = await openPostgres({
      url,
      label: "test",
      migrations: PROVIDERD_PG_MIGRATIONS,
      maxConnections: 2,
    });
    try {
      // An instance leads: the tool refuses, and the store is unchanged.
      const candidate = () =>
        new LeaderLease({
          pool,
          providerUuid: onPostgres.providerUuid,
          instance: "instance-a",
          clock: systemClock,
          logger: createLogger("test", "silent"),
        });
      const instance = candidate();
      assert.equal((await instance.tryNow()).role, "leader");
      const retire = () =>
        retireBackend(onPostgres, { name: "two", lost: true, confirm: SID_2 }, systemClock);
      await assert.rejects(retire(), {
        code: "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
        message: /a providerd instance leads this provider \(instance-a\); stop every instance first/,
      });
      const before = await inspectPlacementStore(onPostgres);
      assert.equal(lostOf(before, "two"), false);
      await instance.stop();

      const done = await retire();
      assert.equal(done.action, "marked_lost");
      assert.deepEqual(done.leases, [LEASE_2]);
      assert.ok(done.backup.startsWith(join(onPostgres.stateDir, "placements-postgres.db.backup-")));
      assert.ok(existsSync(done.backup), "the backup is a file in state_dir");
      assert.equal(lostOf(await inspectPlacementStore(onPostgres), "two"), true, "committed in PostgreSQL");
      // The tool released the lease: an instance leads again at its next try.
      const next = candidate();
      assert.equal((await next.tryNow()).role, "leader");
      await next.stop();
    } finally {
      await pool.end();
    }
  });

  it("init creates the store (and the schema) in an empty database from real, empty mock backends; a second init refuses", async () => {
    const files = await filledProvider(root);
    const url = server.createDatabase(`tools_${++databases}`);
    const sids = { one: SID_1, two: SID_2 };
    const mocks = await startMocks(sids, files.stateDir);
    try {
      const config = postgresConfigOf(files, url, backendsOf(sids, mocks));
      // The chain's lease-history check runs against the devnet in init.test.ts.
      const deps = { chain: { hasLeaseHistory: async () => false }, clock: systemClock };
      const made = await initPlacementStore(config, deps);
      assert.equal(made.placement_store, url);
      assert.deepEqual(made.backends.map((b) => [b.name, b.storage_id]).sort(), Object.entries(sids).sort());
      const inspected = await inspectPlacementStore(config);
      assert.deepEqual(
        (inspected.backends as { name: string; storage_id: string }[])
          .map((b) => [b.name, b.storage_id])
          .sort(),
        Object.entries(sids).sort(),
        "the pins are in PostgreSQL",
      );
      assert.deepEqual(inspected.placements, []);
      await assert.rejects(initPlacementStore(config, deps), {
        code: "ERR_PLACEMENT_INIT_REFUSED",
        message: /already holds \d+ rows; .*init never replaces one/,
      });
    } finally {
      await Promise.all(mocks.map((m) => m.stop()));
    }
  });

  it("add-backend pins a new, empty backend in PostgreSQL; the whole fleet read from real mock backends", async () => {
    const { onPostgres: moved, url } = await movedProvider();
    // The pinned fleet (one, two) and the new backend, each a real mock backend process.
    const sids = { one: SID_1, two: SID_2, three: "8b3e4c60-ad5f-4e70-9b82-9cadbe1f2041" };
    const mocks = await startMocks(sids, moved.stateDir);
    try {
      const config = postgresConfigOf(moved, url, backendsOf(sids, mocks));
      const added = await addBackend(config, "three", { clock: systemClock });
      assert.equal(added.placement_store, url);
      assert.deepEqual([added.added.name, added.added.storage_id], ["three", sids.three]);
      assert.ok(existsSync(added.backup));
      const pins = (await inspectPlacementStore(config)).backends as { name: string; storage_id: string }[];
      assert.deepEqual(
        pins.map((b) => [b.name, b.storage_id]).sort(),
        Object.entries(sids).sort(),
        "the new pin is in PostgreSQL",
      );
      await assert.rejects(addBackend(config, "three", { clock: systemClock }), {
        code: "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
        message: /three is already pinned/,
      });
    } finally {
      await Promise.all(mocks.map((m) => m.stop()));
    }
  });
});

/** A real mock backend process per name, answering as the storage ID given. */
function startMocks(sids: Record<string, string>, dir: string): Promise<Launched<{ url: string }>[]> {
  return Promise.all(
    Object.entries(sids).map(([name, sid]) =>
      launchFred<{ url: string }>(["backend", "mock"], {
        label: `mock-${name}`,
        env: {
          MOCK_BACKEND_ADDR: "127.0.0.1:0",
          MOCK_BACKEND_STORAGE_ID: sid,
          MOCK_BACKEND_CALLBACK_SECRET: secretOf(name),
          MOCK_BACKEND_NAME: name,
          MOCK_BACKEND_DB_PATH: join(dir, `mock-${name}-${sid}.db`),
        },
        readyTimeoutMs: 120_000,
      }),
    ),
  );
}

/** The config's backends list for mocks started by startMocks (the first is the default). */
function backendsOf(sids: Record<string, string>, mocks: Launched<{ url: string }>[]) {
  return Object.keys(sids).map((name, i) => ({
    name,
    url: mocks[i]!.ready.url,
    hmac_secret: secretOf(name),
    default: i === 0,
  }));
}

const secretOf = (name: string) => `${name}-secret-0123456789abcdef0123456789`;

function lostOf(inspected: Record<string, unknown>, backend: string): boolean {
  const b = (inspected.backends as { name: string; lost_at?: string | null }[]).find(
    (x) => x.name === backend,
  );
  return b?.lost_at !== undefined && b.lost_at !== null;
}
