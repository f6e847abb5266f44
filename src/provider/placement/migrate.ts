import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type pg from "pg";
import { FredError } from "../../core/errors.ts";
import { openPostgres, printableUrl } from "../../pg/open.ts";
import { inTransaction } from "../../pg/transaction.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import type { ProviderConfig } from "../config/index.ts";
import { controlSocketPath, providerdListening } from "../reconciler/index.ts";
import {
  columnNames,
  MIRRORED_TABLES,
  openStore,
  PlacementStore,
  PROVIDERD_PG_MIGRATIONS,
  type Row,
  readPgRows,
  readSqliteRows,
  STORE_FILES,
  type StoreFile,
  type TableMap,
  tableDigest,
  upsertPgRows,
} from "../store/index.ts";

/**
 * `fred placement migrate` (providerd stopped): moves a provider's stores between its
 * SQLite files and PostgreSQL (issue #36), whole and verified.
 * - `--to postgres://…` copies the files the config names (placement store, and the
 *   payload store and token tracker when configured) into an empty PostgreSQL database.
 * - `--to sqlite:<dir>` copies a PostgreSQL database's stores into new files in `dir`.
 * Each direction writes everything or nothing: the PostgreSQL copy commits in one
 * transaction only after reading every table back and comparing it with the source (row
 * counts and an order-independent SHA-256 of the rows); the files are written beside
 * their final names and renamed only once each reads back the same. The source is never
 * changed. A target that holds anything is refused, and so is a source in use.
 */

type StoreKind = StoreFile;
const STORES = STORE_FILES;

export interface MigratedTable {
  store: StoreKind["kind"];
  table: string;
  rows: number;
  sha256: string;
}

export interface MigrateSummary {
  from: string | Record<string, string>;
  to: string | Record<string, string>;
  tables: MigratedTable[];
  /** What to put in the provider's config to use the copy. */
  config: Record<string, string>;
}

export type MigrateTarget = { kind: "postgres"; url: string } | { kind: "sqlite"; dir: string };

export function migrateRefusal(message: string): FredError {
  return new FredError("ERR_PLACEMENT_MIGRATE_REFUSED", message);
}
const refusal = migrateRefusal;

/** `--to`: a PostgreSQL URL, or `sqlite:` and an absolute directory. */
export function parseMigrateTarget(text: string): MigrateTarget {
  if (/^postgres(ql)?:\/\//.test(text)) return { kind: "postgres", url: postgresUrl("--to", text) };
  if (text.startsWith("sqlite:")) {
    const dir = text.slice("sqlite:".length);
    if (!isAbsolute(dir)) throw refusal(`--to ${text}: the directory must be an absolute path`);
    return { kind: "sqlite", dir };
  }
  throw refusal(`--to ${text}: expected postgres://… or sqlite:<directory>`);
}

/** `--from`: a PostgreSQL URL. */
export function parseMigrateSource(text: string): string {
  if (!/^postgres(ql)?:\/\//.test(text)) throw refusal(`--from ${printableUrl(text)}: expected postgres://…`);
  return postgresUrl("--from", text);
}

function postgresUrl(flag: string, text: string): string {
  if (/^postgres(ql)?:\/\/[^/@]*:[^/@]*@/.test(text)) {
    throw refusal(
      `${flag}: put the password in --password-file or FRED_DATABASE_PASSWORD, not in the URL (command lines are visible to every user)`,
    );
  }
  return text;
}

async function refuseWhileRunning(config: ProviderConfig): Promise<void> {
  if (await providerdListening(controlSocketPath(config.stateDir))) {
    throw refusal("providerd is running (it answers on its control socket); stop it first");
  }
}

async function connectTarget(url: string, password: string | undefined, label: string): Promise<pg.Pool> {
  return openPostgres({
    url,
    ...(password === undefined ? {} : { password }),
    label,
    migrations: PROVIDERD_PG_MIGRATIONS,
    maxConnections: 2,
    statementTimeoutMs: 600_000,
  });
}

/** The files of the config → an empty PostgreSQL database. */
export async function migrateToPostgres(
  config: ProviderConfig,
  url: string,
  password: string | undefined,
  progress: (line: string) => void,
): Promise<MigrateSummary> {
  if (config.databaseUrl !== undefined) {
    throw refusal(
      "this config already keeps its stores in PostgreSQL (database_url); --to postgres copies a config's SQLite files",
    );
  }
  await refuseWhileRunning(config);
  const sources = new Map<StoreKind, string>([[STORES[0]!, config.placementStoreDbPath]]);
  if (config.payloadStoreDbPath !== undefined) sources.set(STORES[1]!, config.payloadStoreDbPath);
  if (config.tokenTrackerDbPath !== undefined) sources.set(STORES[2]!, config.tokenTrackerDbPath);

  // Read every source first (read-only opens: nothing migrated or written).
  const rows = new Map<TableMap, Row[]>();
  const from: Record<string, string> = {};
  for (const [store, path] of sources) {
    if (store.kind !== "placement" && !existsSync(path)) {
      // providerd creates these on first use: none yet is nothing to copy.
      progress(`${path} does not exist yet: no ${store.kind} rows to copy`);
      continue;
    }
    from[store.kind] = path;
    using database = openSource(store, path, config.providerUuid);
    for (const t of store.tables) {
      rows.set(t, readSqliteRows(database.db, t));
    }
    progress(`read ${path}: ${store.tables.map((t) => `${rows.get(t)!.length} ${t.sqlite}`).join(", ")}`);
  }

  const pool = await connectTarget(url, password, "migration target");
  try {
    const tables = await inTransaction(pool, async (client) => {
      await refuseNonEmpty(client);
      for (const [t, list] of rows) {
        for (let at = 0; at < list.length; at += 5_000)
          await upsertPgRows(client, t, list.slice(at, at + 5_000));
        progress(`wrote ${list.length} ${t.sqlite} rows`);
      }
      // Read back inside the transaction: a difference rolls everything back.
      const copied: MigratedTable[] = [];
      for (const [t, list] of rows) {
        const store = STORES.find((s) => s.tables.includes(t))!;
        copied.push(verified(store.kind, t, list, await readPgRows(client, t)));
      }
      return copied;
    });
    progress(`committed and verified ${tables.length} tables in ${printableUrl(url)}`);
    return {
      from,
      to: printableUrl(url),
      tables,
      config: { database_url: printableUrl(url) },
    };
  } finally {
    await pool.end();
  }
}

/** A source file, opened read-only; the placement store must be the config's provider's and not an unattested copy. */
function openSource(store: StoreKind, path: string, providerUuid: string): SqliteDatabase {
  if (store.kind === "placement") {
    const placement = PlacementStore.open(path, providerUuid, { readonly: true });
    if (placement.copies.takenAt() !== undefined) {
      placement.close();
      throw refusal(
        `${path} is a restored copy that is not attested yet: attest it first (fred placement repair --attest-restored-backup --apply)`,
      );
    }
    return placement.database;
  }
  return openStore(path, store.kind, store.migrations, {
    create: "never",
    durability: "full",
    readonly: true,
  });
}

/** Every table providerd keeps in PostgreSQL must be empty, and no instance may hold the leader lease. */
async function refuseNonEmpty(client: pg.ClientBase): Promise<void> {
  const held: string[] = [];
  for (const name of [...STORES.flatMap((s) => s.tables.map((t) => t.pg)), "fred_leader"]) {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${name}`);
    if (rows[0]!.n !== "0") held.push(`${name} (${rows[0]!.n} rows)`);
  }
  if (held.length > 0) {
    throw refusal(`the target database is not empty: ${held.join(", ")}; migrate into an empty database`);
  }
}

function verified(
  store: StoreKind["kind"],
  t: TableMap,
  source: readonly Row[],
  copy: readonly Row[],
): MigratedTable {
  const want = tableDigest(source);
  const got = tableDigest(copy);
  if (want.rows !== got.rows || want.sha256 !== got.sha256) {
    throw new FredError(
      "ERR_PLACEMENT_MIGRATE_VERIFY",
      `${t.sqlite}: the copy holds ${got.rows} rows (sha256 ${got.sha256}), the source ${want.rows} (sha256 ${want.sha256}); nothing was kept`,
    );
  }
  return { store, table: t.sqlite, ...want };
}

/** A PostgreSQL database → new files in `dir` (placements.db, payloads.db, tokens.db). */
export async function migrateToSqlite(
  config: ProviderConfig,
  fromUrl: string,
  password: string | undefined,
  dir: string,
  progress: (line: string) => void,
): Promise<MigrateSummary> {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw refusal(`${dir} is not a directory`);
  for (const store of STORES) {
    const path = join(dir, store.file);
    if (existsSync(path) || existsSync(`${path}.partial`))
      throw refusal(`${path} already exists; refusing to overwrite it`);
  }
  const pool = await connectTarget(fromUrl, password, "migration source");
  let rows: Map<TableMap, Row[]>;
  try {
    rows = await inTransaction(pool, async (client) => {
      await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
      const live = await client.query<{ holder: string }>(
        "SELECT holder FROM fred_leader WHERE provider_uuid = $1 AND expires_at > now()",
        [config.providerUuid],
      );
      if (live.rowCount !== 0) {
        throw refusal(
          `providerd instance ${live.rows[0]!.holder} leads this database; stop every instance first`,
        );
      }
      const read = new Map<TableMap, Row[]>();
      for (const store of STORES) for (const t of store.tables) read.set(t, await readPgRows(client, t));
      return read;
    });
  } finally {
    await pool.end();
  }
  const meta = new Map((rows.get(MIRRORED_TABLES[0]!) ?? []).map((r) => [r[0], r[1]]));
  if (meta.get("provider_uuid") !== config.providerUuid) {
    throw refusal(
      meta.size === 0
        ? `${printableUrl(fromUrl)} holds no placement store`
        : `${printableUrl(fromUrl)} holds provider ${String(meta.get("provider_uuid"))}'s stores, not ${config.providerUuid}`,
    );
  }
  progress(
    `read ${printableUrl(fromUrl)}: ${[...rows].map(([t, r]) => `${r.length} ${t.sqlite}`).join(", ")}`,
  );

  const tables: MigratedTable[] = [];
  const written: string[] = [];
  const to: Record<string, string> = {};
  try {
    for (const store of STORES) {
      const path = join(dir, store.file);
      const partial = `${path}.partial`;
      written.push(partial);
      {
        using database = openStore(partial, store.kind, store.migrations, {
          create: "must-not-exist",
          durability: "full",
        });
        const db = database.db;
        db.transaction(() => {
          for (const t of store.tables) {
            const names = columnNames(t);
            const insert = db.prepare(
              `INSERT INTO ${t.sqlite} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
            );
            for (const row of rows.get(t)!) insert.run(row);
          }
        })();
        for (const t of store.tables) {
          tables.push(verified(store.kind, t, rows.get(t)!, readSqliteRows(db, t)));
        }
      }
      progress(`wrote and verified ${path}`);
      to[store.kind] = path;
    }
    for (const store of STORES) renameSync(join(dir, `${store.file}.partial`), join(dir, store.file));
  } catch (err) {
    for (const path of written)
      for (const p of [path, `${path}-wal`, `${path}-shm`]) rmSync(p, { force: true });
    throw err;
  }
  return {
    from: printableUrl(fromUrl),
    to,
    tables,
    config: {
      placement_store_db_path: join(dir, "placements.db"),
      payload_store_db_path: join(dir, "payloads.db"),
      token_tracker_db_path: join(dir, "tokens.db"),
    },
  };
}
