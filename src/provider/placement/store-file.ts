import { FredError } from "../../core/errors.ts";
import { openPostgres } from "../../pg/open.ts";
import { readDatabasePassword } from "../../pg/password.ts";
import type { TransactionRunner } from "../../pg/transaction.ts";
import type { ProviderConfig } from "../config/index.ts";
import { openPlacementsOnPostgres, type PlacementStore, PROVIDERD_PG_MIGRATIONS } from "../store/index.ts";

/**
 * The placement store's file, for the offline tools that work on it (init, repair,
 * add-backend, retire-backend, snapshot, attest). A config with database_url keeps the
 * store in PostgreSQL, where these tools do not run: refused, naming the way out.
 */
export function placementStoreFile(config: ProviderConfig, tool: string): string {
  if (config.databaseUrl === undefined) return config.placementStoreDbPath;
  throw new FredError(
    "ERR_CONFIG",
    `${tool} works on the SQLite placement store file, and this config keeps the store in PostgreSQL (database_url), where it does not run; ` +
      "copy the stores to files with fred placement migrate --to sqlite:<directory> to inspect them there",
  );
}

/**
 * Runs `read` over the placement store in PostgreSQL, loaded read-only (`fred placement
 * inspect` with database_url): one consistent snapshot of its tables in an in-memory
 * copy whose writes are refused; the schema must be this release's (nothing is migrated,
 * so a tool of another release never changes the database running instances use).
 */
export async function readPlacementsOnPostgres<T>(
  config: ProviderConfig,
  env: NodeJS.ProcessEnv,
  read: (store: PlacementStore) => T,
): Promise<T> {
  const password = readDatabasePassword(config.databasePasswordFile, env);
  const pool = await openPostgres({
    url: config.databaseUrl!,
    ...(password === undefined ? {} : { password }),
    label: "providerd database",
    migrations: PROVIDERD_PG_MIGRATIONS,
    applyMigrations: false,
    maxConnections: 2,
  });
  try {
    const refuseWrites: TransactionRunner = () =>
      Promise.reject(new FredError("ERR_NOT_LEADER", "a read-only copy of the placement store"));
    using store = await openPlacementsOnPostgres({ pool, fence: refuseWrites }, config.providerUuid, {
      restoredCopy: "allow",
    });
    return read(store);
  } finally {
    await pool.end();
  }
}
