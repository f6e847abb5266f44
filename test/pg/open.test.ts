import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { openPostgres } from "../../src/pg/open.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../support/postgres.ts";

const ONE = "CREATE TABLE one (id integer PRIMARY KEY)";
const TWO = "CREATE TABLE two (id integer PRIMARY KEY)";

describe("openPostgres", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server?.stop());

  const version = async (url: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<{ version: number }>("SELECT version FROM fred_schema")).rows.map(
        (r) => r.version,
      );
    } finally {
      await client.end();
    }
  };

  it("applies the migrations once, also when several instances open the database together", async () => {
    const url = server.createDatabase("together");
    const pools = await Promise.all(
      Array.from({ length: 4 }, () => openPostgres({ url, label: "test store", migrations: [ONE] })),
    );
    assert.deepEqual(await version(url), [1], "one version row");
    // A later release adds a migration: only it runs.
    const later = await openPostgres({ url, label: "test store", migrations: [ONE, TWO] });
    assert.deepEqual(await version(url), [2]);
    await later.query("INSERT INTO two (id) VALUES (1)");
    for (const p of [...pools, later]) await p.end();
  });

  it("refuses a schema newer than the code, and changes nothing", async () => {
    const url = server.createDatabase("newer");
    const pool = await openPostgres({ url, label: "test store", migrations: [ONE, TWO] });
    await pool.end();
    await assert.rejects(openPostgres({ url, label: "test store", migrations: [ONE] }), {
      code: "ERR_STORE_SCHEMA_NEWER",
      message: /test store's schema is version 2, newer than this release's 1/,
    });
    assert.deepEqual(await version(url), [2]);
  });

  it("a failed migration leaves the database as it was", async () => {
    const url = server.createDatabase("failed");
    await assert.rejects(
      openPostgres({ url, label: "test store", migrations: [ONE, "CREATE TABLE one (x int)"] }),
      {
        code: "ERR_STORE_OPEN",
      },
    );
    const pool = await openPostgres({ url, label: "test store", migrations: [TWO] });
    const tables = await pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'one'",
    );
    assert.equal(tables.rows[0]?.n, "0", "the first migration was rolled back with the second");
    await pool.end();
  });

  it("a checked-out connection the server ends between queries fails its next query, and the process lives on", async () => {
    const url = server.createDatabase("ended");
    const pool = await openPostgres({
      url,
      label: "test store",
      migrations: [ONE],
      idleInTransactionTimeoutMs: 200,
    });
    const client = await pool.connect();
    try {
      // Left idle in a transaction (as by a frozen process), the server ends the session
      // while the client is checked out and no query is active: pg reports that as an
      // 'error' event on the client, which would exit the process without a listener.
      await client.query("BEGIN");
      await new Promise((r) => setTimeout(r, 800));
      await assert.rejects(client.query("SELECT 1"));
    } finally {
      client.release(true);
    }
    const after = await pool.query<{ one: number }>("SELECT 1 AS one");
    assert.equal(after.rows[0]?.one, 1, "the pool serves on with a new connection");
    await pool.end();
  });

  it("an unreachable server is ERR_STORE_UNREACHABLE, and the password never appears in the message", async () => {
    const secret = "s3cret-Pa55word";
    // A port nothing listens on (the server's own, plus one).
    const url = `postgres://fred:${secret}@127.0.0.1:${server.port + 1}/postgres`;
    await assert.rejects(
      openPostgres({
        url,
        password: secret,
        label: "placement store",
        migrations: [ONE],
        connectTimeoutMs: 2_000,
      }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, "ERR_STORE_UNREACHABLE");
        assert.match(err.message, /cannot connect to the placement store/);
        assert.ok(!err.message.includes(secret), err.message);
        return true;
      },
    );
  });
});
