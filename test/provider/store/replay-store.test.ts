import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import type pg from "pg";
import { openPostgres } from "../../../src/pg/open.ts";
import { TokenTracker } from "../../../src/provider/store/index.ts";
import { PROVIDERD_PG_MIGRATIONS } from "../../../src/provider/store/pg/migrations.ts";
import { PgTokenTracker } from "../../../src/provider/store/pg/token-tracker.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { replayStoreContract } from "./replay-store-contract.ts";

describe("replay store on SQLite (TokenTracker)", () => {
  const root = mkdtempSync(join(tmpdir(), "fred-replay-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  replayStoreContract(() => {
    const path = join(root, `tokens-${++n}.db`);
    return {
      open: async () => TokenTracker.open(path),
      reopen: async () => TokenTracker.open(path),
      close: async (s) => (s as TokenTracker).close(),
    };
  });
});

describe("replay store on PostgreSQL (PgTokenTracker)", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server?.stop());
  let n = 0;
  replayStoreContract(() => {
    const url = server.createDatabase(`replay_${++n}`);
    const pools = new Map<PgTokenTracker, pg.Pool>();
    const open = async () => {
      const pool = await openPostgres({ url, label: "test store", migrations: PROVIDERD_PG_MIGRATIONS });
      const store = new PgTokenTracker(pool);
      pools.set(store, pool);
      return store;
    };
    return { open, reopen: open, close: async (s) => pools.get(s as PgTokenTracker)?.end() };
  });
});
