import pg from "pg";
import { FredError } from "../core/errors.ts";
import type { Logger } from "../log.ts";

/**
 * The one way this codebase opens a PostgreSQL database (issue #36: providerd's store on
 * PostgreSQL, one leader among several instances). A bounded pool from the node-postgres
 * driver, and numbered append-only migrations in `fred_schema`, applied under an advisory
 * lock so instances starting together migrate once; a schema newer than the code is
 * refused, never touched.
 *
 * Every session carries bounds, so a stuck peer cannot hold the others forever:
 * - `statement_timeout`: no statement runs longer;
 * - `lock_timeout`: no statement waits longer for a row lock (a standby's takeover
 *   attempt waits for the leader's fenced transactions, see ha/leader-lease.ts);
 * - `idle_in_transaction_session_timeout`: a transaction left open (its process frozen
 *   by SIGSTOP, a long pause) is ended by the server and its locks released.
 *
 * The URL is libpq's (`postgres://user@host:port/db?sslmode=verify-full&sslrootcert=…`);
 * `password` overrides one in the URL so it can come from a file or the environment, and
 * no message built here contains either.
 */
export interface OpenPostgresOptions {
  url: string;
  /** From a file or the environment; never logged. */
  password?: string;
  /** Names the database in messages, e.g. "placement store". */
  label: string;
  migrations: readonly string[];
  /**
   * false: a reader that must not change the schema (e.g. `fred placement inspect` beside
   * running instances of another release) checks that it is exactly this release's and
   * refuses otherwise. Default true: pending migrations are applied.
   */
  applyMigrations?: boolean;
  /** Connections at most (default 8). */
  maxConnections?: number;
  /** Per-statement bound (default 10 s). */
  statementTimeoutMs?: number;
  /** Row-lock wait bound (default 5 s). */
  lockTimeoutMs?: number;
  /** Open-transaction idle bound (default 15 s). */
  idleInTransactionTimeoutMs?: number;
  /** Connection attempt bound (default 5 s). */
  connectTimeoutMs?: number;
  /** Shown in pg_stat_activity (default "fred"). */
  applicationName?: string;
  logger?: Logger;
}

/** A database URL as it may be shown: without its query (TLS file paths) or a password in it. */
export function printableUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = "";
    u.search = "";
    return u.toString();
  } catch {
    return url.replace(/\?.*$/, "").replace(/:[^:@/]*@/, "@");
  }
}

/** The schema version table and the advisory lock key that serialises migrations. */
const SCHEMA_TABLE = "fred_schema";
const MIGRATION_LOCK = 0x66726564; // "fred"

export async function openPostgres(o: OpenPostgresOptions): Promise<pg.Pool> {
  const pool = new pg.Pool({
    connectionString: o.url,
    ...(o.password === undefined ? {} : { password: o.password }),
    max: o.maxConnections ?? 8,
    connectionTimeoutMillis: o.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: o.applicationName ?? "fred",
    statement_timeout: o.statementTimeoutMs ?? 10_000,
    lock_timeout: o.lockTimeoutMs ?? 5_000,
    idle_in_transaction_session_timeout: o.idleInTransactionTimeoutMs ?? 15_000,
  });
  // An idle connection the server drops (a restart, a network cut) is reported here; the
  // pool replaces it on the next checkout. Without a listener the process would exit.
  pool.on("error", (err) =>
    o.logger?.warn({ err: describePgError(err) }, `${o.label}: idle connection lost`),
  );
  // A checked-out connection the server ends between two queries (an idle-in-transaction
  // timeout after a long pause, an administrator's pg_terminate_backend) is reported as an
  // 'error' event on the client, and pg-pool listens only while the client is idle: without
  // this the process would exit. The caller learns of it from its next query, which fails.
  pool.on("connect", (client) =>
    client.on("error", (err) =>
      o.logger?.debug({ err: describePgError(err) }, `${o.label}: connection ended by the server`),
    ),
  );
  try {
    await migrate(pool, o);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return pool;
}

function schemaNewer(label: string, current: number, expected: number): FredError {
  return new FredError(
    "ERR_STORE_SCHEMA_NEWER",
    `the ${label}'s schema is version ${current}, newer than this release's ${expected}: run the release that wrote it`,
  );
}

/** The schema must be exactly this release's; read only (no table is created, nothing migrated). */
async function checkSchema(client: pg.PoolClient, o: OpenPostgresOptions): Promise<void> {
  let current: number;
  try {
    const found = await client.query<{ present: boolean }>(
      `SELECT to_regclass('${SCHEMA_TABLE}') IS NOT NULL AS present`,
    );
    current = found.rows[0]?.present
      ? ((await client.query<{ version: number }>(`SELECT version FROM ${SCHEMA_TABLE}`)).rows[0]?.version ??
        0)
      : 0;
  } catch (err) {
    throw new FredError("ERR_STORE_OPEN", `cannot read the ${o.label}'s schema: ${describePgError(err)}`, {
      cause: err,
    });
  }
  const expected = o.migrations.length;
  if (current > expected) throw schemaNewer(o.label, current, expected);
  if (current === 0) {
    throw new FredError(
      "ERR_STORE_OPEN",
      `the ${o.label} holds no providerd schema: move a provider's stores in first (fred placement migrate)`,
    );
  }
  if (current < expected) {
    throw new FredError(
      "ERR_STORE_SCHEMA_OLDER",
      `the ${o.label}'s schema is version ${current}, older than this release's ${expected}: start providerd of this release first (it migrates the schema)`,
    );
  }
}

async function migrate(pool: pg.Pool, o: OpenPostgresOptions): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw new FredError(
      "ERR_STORE_UNREACHABLE",
      `cannot connect to the ${o.label}: ${describePgError(err)}`,
      {
        cause: err,
      },
    );
  }
  if (o.applyMigrations === false) {
    try {
      await checkSchema(client, o);
    } finally {
      client.release();
    }
    return;
  }
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLE} (version integer NOT NULL)`);
    const row = await client.query<{ version: number }>(`SELECT version FROM ${SCHEMA_TABLE}`);
    const current = row.rows[0]?.version ?? 0;
    if (current > o.migrations.length) throw schemaNewer(o.label, current, o.migrations.length);
    for (let v = current + 1; v <= o.migrations.length; v++) await client.query(o.migrations[v - 1]!);
    if (row.rowCount === 0) {
      await client.query(`INSERT INTO ${SCHEMA_TABLE} (version) VALUES ($1)`, [o.migrations.length]);
    } else if (current < o.migrations.length) {
      await client.query(`UPDATE ${SCHEMA_TABLE} SET version = $1`, [o.migrations.length]);
    }
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    if (err instanceof FredError) throw err;
    throw new FredError("ERR_STORE_OPEN", `cannot migrate the ${o.label}: ${describePgError(err)}`, {
      cause: err,
    });
  } finally {
    client.release();
  }
}

/**
 * A driver or server error as one line for logs: the SQLSTATE and message, never the
 * connection string (node-postgres does not put the password in messages; this keeps it so).
 */
export function describePgError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const message = typeof e?.message === "string" ? e.message : String(err);
  return e?.code === undefined ? message : `${message} (${e.code})`;
}
