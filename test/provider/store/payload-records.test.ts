import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import type pg from "pg";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { openPostgres } from "../../../src/pg/open.ts";
import { LeaderLease } from "../../../src/provider/ha/leader-lease.ts";
import { PayloadStore } from "../../../src/provider/store/index.ts";
import { PROVIDERD_PG_MIGRATIONS } from "../../../src/provider/store/pg/migrations.ts";
import { PgPayloadStore } from "../../../src/provider/store/pg/payload-store.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { type PayloadRecordsEngine, payloadRecordsContract } from "./payload-records-contract.ts";

const silent = createLogger("payload-records-test", "silent");

describe("payload store on SQLite (PayloadStore)", () => {
  const root = mkdtempSync(join(tmpdir(), "fred-payloads-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  payloadRecordsContract((): PayloadRecordsEngine => {
    const path = join(root, `payloads-${++n}.db`);
    return {
      open: async () => PayloadStore.open(path),
      reopen: async () => PayloadStore.open(path),
      close: async (s) => (s as PayloadStore).close(),
      tamper: async (lease, bytes) => {
        const db = new Database(path);
        db.prepare("UPDATE payloads SET payload = ? WHERE lease_uuid = ?").run(bytes, lease);
        db.close();
      },
    };
  });
});

describe("payload store on PostgreSQL (PgPayloadStore)", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  const opened = new Map<PgPayloadStore, { pool: pg.Pool; lease: LeaderLease }>();
  before(async () => {
    server = await startPostgres();
  });
  after(() => server?.stop());

  /** A store whose promotions are fenced by a leader lease this instance holds. */
  async function openLeading(url: string, provider: string): Promise<PgPayloadStore> {
    const pool = await openPostgres({ url, label: "test store", migrations: PROVIDERD_PG_MIGRATIONS });
    const lease = new LeaderLease({
      pool,
      providerUuid: provider,
      instance: randomUUID(),
      clock: systemClock,
      logger: silent,
    });
    await lease.tryNow();
    const store = new PgPayloadStore(pool, (work) => lease.fenced(work));
    opened.set(store, { pool, lease });
    return store;
  }

  async function close(store: PgPayloadStore): Promise<void> {
    const o = opened.get(store);
    await o?.lease.stop();
    await o?.pool.end();
  }

  let n = 0;
  payloadRecordsContract((): PayloadRecordsEngine => {
    const url = server.createDatabase(`payloads_${++n}`);
    // One provider: the first handle leads; a second (`reopen` while the first is open)
    // is a standby, which the contract only has put and read.
    const provider = randomUUID();
    let first: PgPayloadStore | undefined;
    return {
      open: async () => {
        first = await openLeading(url, provider);
        return first;
      },
      reopen: async () => openLeading(url, provider),
      close: async (s) => close(s as PgPayloadStore),
      tamper: async (lease, bytes) => {
        await opened
          .get(first!)!
          .pool.query("UPDATE payloads SET payload = $2 WHERE lease_uuid = $1", [lease, bytes]);
      },
    };
  });

  it("a deposed leader's promotion commits nothing (ERR_NOT_LEADER); a standby still stores uploads", async () => {
    const url = server.createDatabase(`payloads_${++n}`);
    const provider = randomUUID();
    const leader = await openLeading(url, provider);
    const standby = await openLeading(url, provider);
    const lease = "0190f3a2-7c1e-7000-8000-000000000003";
    const upload = Buffer.from('{"image":"nginx:1.27"}');
    assert.equal(await standby.put(lease, upload, 1), "stored", "any instance stores a tenant's upload");
    await assert.rejects(standby.promote(lease, Buffer.from('{"image":"x:2"}'), 2), {
      code: "ERR_NOT_LEADER",
    });
    // The leader is deposed behind its back (its row expires and another instance takes it).
    const { pool } = opened.get(leader)!;
    await pool.query("UPDATE fred_leader SET holder = 'someone-else', generation = generation + 1");
    await assert.rejects(leader.promote(lease, Buffer.from('{"image":"x:3"}'), 3), {
      code: "ERR_NOT_LEADER",
    });
    const kept = (await leader.get(lease))!;
    assert.ok(kept.payload.equals(upload), "the upload is untouched");
    assert.equal(kept.promoted, false);
    await close(leader);
    await close(standby);
  });
});
