import { FredError } from "../../core/errors.ts";
import type { ProviderConfig } from "../config/index.ts";

/**
 * The placement store's file, for the offline tools that work on the file only (snapshot,
 * attest). A config with database_url keeps the store in PostgreSQL, where these tools do
 * not run: refused, naming the way out. (The others open either: tool-store.ts.)
 */
export function placementStoreFile(config: ProviderConfig, tool: string): string {
  if (config.databaseUrl === undefined) return config.placementStoreDbPath;
  throw new FredError(
    "ERR_CONFIG",
    `${tool} works on the SQLite placement store file, and this config keeps the store in PostgreSQL (database_url), where it does not run; ` +
      "copy the stores to files with fred placement migrate --to sqlite:<directory> to inspect them there",
  );
}
