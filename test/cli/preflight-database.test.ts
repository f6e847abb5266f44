import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type pg from "pg";
import { checkDatabase } from "../../src/cli/providerd-preflight.ts";
import { openPostgres } from "../../src/pg/open.ts";
import { inTransaction } from "../../src/pg/transaction.ts";
import { parseProviderConfig } from "../../src/provider/config/index.ts";
import { PROVIDERD_PG_MIGRATIONS } from "../../src/provider/store/pg/migrations.ts";
import { createPlacementsOnPostgres } from "../../src/provider/store/pg/placement-mirror.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../provider/config/fixtures.ts";
import { OTHER_PROVIDER, SID_1 } from "../provider/store/fixture.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../support/postgres.ts";

/** `--check-config --online` with database_url, against a real PostgreSQL cluster. */
function configFor(url: string, provider = PROVIDER_UUID) {
  const c = baseConfig();
  delete c.placement_store_db_path;
  c.provider_uuid = provider;
  c.database_url = url;
  c.state_dir = "/var/lib/fred";
  return parseProviderConfig(yamlOf(c));
}

describe("preflight: the database", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  let url: string;
  before(async () => {
    server = await startPostgres();
    url = server.createDatabase("preflight");
    pool = await openPostgres({ url, label: "test", migrations: PROVIDERD_PG_MIGRATIONS });
    const store = await createPlacementsOnPostgres(
      { pool, fence: (work) => inTransaction(pool, work) },
      PROVIDER_UUID,
      [{ name: "one", storageId: SID_1, baseline: { provisions: 0, retentions: 0 } }],
      1_700_000_000_000,
    );
    store.close();
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });

  async function check(config: ReturnType<typeof configFor>, env: Record<string, string> = {}) {
    const notes: { ok: boolean; detail: string }[] = [];
    const pins = await checkDatabase(
      config,
      env,
      3_000,
      (_c, detail) => notes.push({ ok: true, detail }),
      (_c, detail) => notes.push({ ok: false, detail }),
    );
    return { pins, notes };
  }

  it("passes for the provider whose stores it holds, with their pins", async () => {
    const { pins, notes } = await check(configFor(url));
    assert.deepEqual(notes, [
      { ok: true, detail: "answers and holds this provider's stores (1 pinned backend(s))" },
    ]);
    assert.deepEqual([...(pins ?? [])], [["one", SID_1]]);
  });

  it("fails, saying what to do, for another provider, an empty database, or no database at all", async () => {
    const other = await check(configFor(url, OTHER_PROVIDER));
    assert.match(other.notes[0]!.detail, new RegExp(`holds provider ${PROVIDER_UUID}'s stores`));
    const empty = await check(configFor(server.createDatabase("preflight_empty")));
    assert.match(
      empty.notes[0]!.detail,
      /holds no providerd schema yet: move the stores in with fred placement migrate/,
    );
    const nowhere = await check(configFor("postgres://fred@127.0.0.1:1/fred"));
    assert.equal(nowhere.notes[0]!.ok, false);
    assert.match(nowhere.notes[0]!.detail, /^does not answer: /);
    for (const r of [other, empty, nowhere]) assert.equal(r.pins, undefined);
  });
});
