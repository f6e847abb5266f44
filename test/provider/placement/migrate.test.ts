import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type pg from "pg";
import { stringify } from "yaml";
import { openPostgres } from "../../../src/pg/open.ts";
import { readDatabasePassword } from "../../../src/pg/password.ts";
import { inTransaction } from "../../../src/pg/transaction.ts";
import type { ProviderConfig } from "../../../src/provider/config/index.ts";
import { MaintenanceJournal } from "../../../src/provider/maintenance/journal.ts";
import {
  migrateToPostgres,
  migrateToSqlite,
  parseMigrateTarget,
} from "../../../src/provider/placement/migrate.ts";
import { controlSocketPath } from "../../../src/provider/reconciler/index.ts";
import { PayloadStore, PlacementStore } from "../../../src/provider/store/index.ts";
import { PAYLOAD_MIGRATIONS } from "../../../src/provider/store/payload-store.ts";
import { PROVIDERD_PG_MIGRATIONS } from "../../../src/provider/store/pg/migrations.ts";
import { PAYLOADS_TABLE } from "../../../src/provider/store/pg/payload-store.ts";
import {
  MIRRORED_TABLES,
  openPlacementsOnPostgres,
} from "../../../src/provider/store/pg/placement-mirror.ts";
import {
  readPgRows,
  readSqliteRows,
  type TableMap,
  tableDigest,
} from "../../../src/provider/store/pg/tables.ts";
import { USED_TOKENS_TABLE } from "../../../src/provider/store/pg/token-tracker.ts";
import { PLACEMENT_MIGRATIONS } from "../../../src/provider/store/placement-schema.ts";
import { openStore } from "../../../src/provider/store/sqlite.ts";
import { TOKEN_TRACKER_MIGRATIONS } from "../../../src/provider/store/token-tracker.ts";
import { runFred } from "../../support/index.ts";
import { skipWithoutPostgres, startPostgres, type TestPostgres } from "../../support/postgres.ts";
import { PROVIDER_ADDRESS } from "../config/fixtures.ts";
import { LEASE_1, LEASE_2, OP_2, OTHER_PROVIDER, PROVIDER } from "../store/fixture.ts";
import { SECRET } from "../store/payload-records-contract.ts";
import { filledProvider } from "./filled-provider.ts";

/**
 * `fred placement migrate` against a real PostgreSQL cluster: a provider's three SQLite
 * files go to PostgreSQL and back with every row intact, and each refusal leaves both
 * sides as they were.
 */
const root = mkdtempSync(join(tmpdir(), "fred-migrate-"));
const quiet = () => {};

const STORE_FILES: {
  name: "placement" | "payload" | "token-tracker";
  migrations: readonly string[];
  tables: readonly TableMap[];
}[] = [
  { name: "placement", migrations: PLACEMENT_MIGRATIONS, tables: MIRRORED_TABLES },
  { name: "payload", migrations: PAYLOAD_MIGRATIONS, tables: [PAYLOADS_TABLE] },
  { name: "token-tracker", migrations: TOKEN_TRACKER_MIGRATIONS, tables: [USED_TOKENS_TABLE] },
];

/** Every copied row of the three files, table by table, in a stable order. */
function fileRows(paths: [string, string, string]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  STORE_FILES.forEach((s, i) => {
    using db = openStore(paths[i]!, s.name, s.migrations, {
      create: "never",
      durability: "full",
      readonly: true,
    });
    for (const t of s.tables) out[t.sqlite] = readSqliteRows(db.db, t).map(text).sort();
  });
  return out;
}

function text(row: unknown[]): string {
  return JSON.stringify(row.map((v) => (Buffer.isBuffer(v) ? v.toString("hex") : v)));
}

function pathsOf(c: ProviderConfig): [string, string, string] {
  return [c.placementStoreDbPath, c.payloadStoreDbPath!, c.tokenTrackerDbPath!];
}

describe("fred placement migrate", { skip: skipWithoutPostgres }, () => {
  let server: TestPostgres;
  const pools: pg.Pool[] = [];
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const pool of pools) await pool.end().catch(() => {});
    server?.stop();
    rmSync(root, { recursive: true, force: true });
  });
  let databases = 0;
  const freshDatabase = () => server.createDatabase(`migrate_${++databases}`);
  async function poolOf(url: string): Promise<pg.Pool> {
    const pool = await openPostgres({ url, label: "test", migrations: PROVIDERD_PG_MIGRATIONS });
    pools.push(pool);
    return pool;
  }
  async function pgRows(url: string): Promise<Record<string, string[]>> {
    const pool = await poolOf(url);
    const out: Record<string, string[]> = {};
    for (const s of STORE_FILES) {
      for (const t of s.tables)
        out[t.sqlite] = (await readPgRows(pool as unknown as pg.ClientBase, t)).map(text).sort();
    }
    return out;
  }

  it("files → PostgreSQL → files keeps every row of every table; providerd's stores read the copy", async () => {
    const config = await filledProvider(root);
    const original = fileRows(pathsOf(config));
    const url = freshDatabase();

    const there = await migrateToPostgres(config, url, undefined, quiet);
    assert.deepEqual(await pgRows(url), original, "PostgreSQL holds exactly the files' rows");
    assert.equal(there.tables.length, MIRRORED_TABLES.length + 2);
    assert.deepEqual(there.config, { database_url: url });
    const copied = Object.fromEntries(there.tables.map((t) => [t.table, t.rows]));
    assert.deepEqual(
      copied,
      Object.fromEntries(Object.entries(original).map(([t, rows]) => [t, rows.length])),
    );
    assert.ok(copied.placements! >= 2 && copied.maintenance === 1 && copied.used_tokens === 2);

    // The copy is providerd's store on PostgreSQL: the mirror opens it.
    const pool = await poolOf(url);
    using mirror = await openPlacementsOnPostgres({ pool, fence: (w) => inTransaction(pool, w) }, PROVIDER);
    assert.equal(mirror.placements.placement(LEASE_1)?.owner, "one");
    assert.equal(mirror.placements.attemptFor(LEASE_2)?.operationId, OP_2);
    assert.equal(MaintenanceJournal.of(mirror.placements).pending(LEASE_1)?.key, "k1");

    const back = join(config.stateDir, "back");
    mkdirSync(back);
    const home = await migrateToSqlite(config, url, undefined, back, quiet);
    assert.deepEqual(
      fileRows([join(back, "placements.db"), join(back, "payloads.db"), join(back, "tokens.db")]),
      original,
      "the files made from PostgreSQL hold exactly the original rows",
    );
    // (Reading the files above left SQLite's -wal/-shm beside them.)
    const files = readdirSync(back).filter((f) => !/-(wal|shm)$/.test(f));
    assert.deepEqual(files.sort(), ["payloads.db", "placements.db", "tokens.db"], "no partial file is left");
    assert.equal(home.config.placement_store_db_path, join(back, "placements.db"));
    using reopened = PlacementStore.open(join(back, "placements.db"), PROVIDER);
    assert.equal(reopened.placements.retained.get(LEASE_1)?.owner, "one");
    using payloads = PayloadStore.open(join(back, "payloads.db"));
    assert.ok((await payloads.get(LEASE_2))!.payload.includes(SECRET), "an unmasked upload keeps its bytes");
  });

  it("refuses a target that holds anything, and changes nothing there", async () => {
    const url = freshDatabase();
    await migrateToPostgres(await filledProvider(root), url, undefined, quiet);
    const before = await pgRows(url);
    await assert.rejects(migrateToPostgres(await filledProvider(root), url, undefined, quiet), {
      code: "ERR_PLACEMENT_MIGRATE_REFUSED",
      message: /not empty: placement_meta \(1 rows\)/,
    });
    assert.deepEqual(await pgRows(url), before);
  });

  it("refuses while providerd answers on its control socket", async () => {
    const config = await filledProvider(root);
    const listening = createServer();
    await new Promise<void>((resolve) => listening.listen(controlSocketPath(config.stateDir), resolve));
    try {
      await assert.rejects(migrateToPostgres(config, freshDatabase(), undefined, quiet), {
        code: "ERR_PLACEMENT_MIGRATE_REFUSED",
        message: /providerd is running/,
      });
    } finally {
      listening.close();
    }
  });

  it("back to files: refuses a database an instance leads, another provider's, and a directory with a store in it", async () => {
    const config = await filledProvider(root);
    const url = freshDatabase();
    await migrateToPostgres(config, url, undefined, quiet);
    const dir = join(config.stateDir, "refused");
    mkdirSync(dir);

    const other = await filledProvider(root, OTHER_PROVIDER);
    await assert.rejects(migrateToSqlite(other, url, undefined, dir, quiet), {
      code: "ERR_PLACEMENT_MIGRATE_REFUSED",
      message: new RegExp(`holds provider ${PROVIDER}'s stores`),
    });

    const pool = await poolOf(url);
    await pool.query(
      "INSERT INTO fred_leader (provider_uuid, holder, generation, expires_at) VALUES ($1, 'instance-7', 1, now() + interval '1 minute')",
      [PROVIDER],
    );
    await assert.rejects(migrateToSqlite(config, url, undefined, dir, quiet), {
      code: "ERR_PLACEMENT_MIGRATE_REFUSED",
      message: /instance-7 leads this database/,
    });
    await pool.query("DELETE FROM fred_leader");

    writeFileSync(join(dir, "tokens.db"), "");
    await assert.rejects(migrateToSqlite(config, url, undefined, dir, quiet), {
      code: "ERR_PLACEMENT_MIGRATE_REFUSED",
      message: /tokens\.db already exists/,
    });
    assert.deepEqual(readdirSync(dir), ["tokens.db"], "nothing else was written");
  });

  it("a table's digest ignores row order and changes with any byte", () => {
    const rows = [
      [Buffer.from([1, 2]), "a", 1],
      [Buffer.from([3]), null, 2],
    ];
    const digest = tableDigest(rows);
    assert.deepEqual(tableDigest([...rows].reverse()), digest);
    assert.notEqual(tableDigest([[Buffer.from([1, 3]), "a", 1], rows[1]!]).sha256, digest.sha256);
    assert.notEqual(tableDigest([[Buffer.from([1, 2]), "a", "1"], rows[1]!]).sha256, digest.sha256);
    assert.equal(tableDigest(rows.slice(1)).rows, 1);
  });

  it("bad targets and password sources are refused before anything is read", () => {
    for (const [to, why] of [
      ["postgres://fred:hunter2@db/fred", /not in the URL/],
      ["sqlite:relative/dir", /absolute path/],
      ["mysql://db/fred", /expected postgres/],
    ] as const) {
      assert.throws(
        () => parseMigrateTarget(to),
        { code: "ERR_PLACEMENT_MIGRATE_REFUSED", message: why },
        to,
      );
    }
    const file = join(root, "password");
    writeFileSync(file, "s3cret\n", { mode: 0o644 });
    chmodSync(file, 0o644);
    assert.throws(() => readDatabasePassword(file, {}), { message: /readable by others/ });
    chmodSync(file, 0o600);
    assert.equal(readDatabasePassword(file, { FRED_DATABASE_PASSWORD: "env" }), "s3cret");
    assert.equal(readDatabasePassword(undefined, { FRED_DATABASE_PASSWORD: "env" }), "env");
    assert.throws(() => readDatabasePassword(join(root, "missing"), {}), {
      message: /cannot read the password file/,
    });
  });

  it("the CLI prints one JSON result, and a refusal exits 1 with its code", async () => {
    const config = await filledProvider(root);
    const cfg = join(config.stateDir, "providerd.yaml");
    writeFileSync(
      cfg,
      stringify({
        provider_uuid: PROVIDER,
        provider_address: PROVIDER_ADDRESS,
        keyring_dir: join(root, "keyring"),
        key_name: "provider",
        callback_base_url: "http://127.0.0.1:8080",
        placement_store_db_path: config.placementStoreDbPath,
        payload_store_db_path: config.payloadStoreDbPath,
        token_tracker_db_path: config.tokenTrackerDbPath,
        backends: [{ name: "one", url: "http://127.0.0.1:9001", hmac_secret: "s".repeat(32), default: true }],
      }),
    );
    const url = freshDatabase();
    const ok = await runFred(["placement", "migrate", "--config", cfg, "--to", url]);
    assert.equal(ok.code, 0, ok.stderr);
    const result = JSON.parse(ok.stdout) as { ok: boolean; tables: { table: string; rows: number }[] };
    assert.equal(result.ok, true);
    assert.equal(result.tables.find((t) => t.table === "used_tokens")?.rows, 2);
    assert.match(ok.stderr, /committed and verified/);

    const again = await runFred(["placement", "migrate", "--config", cfg, "--to", url]);
    assert.equal(again.code, 1);
    const refused = JSON.parse(again.stdout) as { ok: boolean; code: string };
    assert.deepEqual([refused.ok, refused.code], [false, "ERR_PLACEMENT_MIGRATE_REFUSED"]);
    assert.ok(existsSync(config.placementStoreDbPath), "the source is untouched");
  });
});
