import {
  type Durability,
  type OpenDatabaseOptions,
  openDatabase,
  type SqliteDatabase,
} from "../../sqlite/index.ts";

/**
 * How providerd's three stores open their files: private (created 0600; a symlink, extra
 * hard link or group/other access is refused on every open) and kind-marked, so one
 * store's file is never opened as another's. Everything else is src/sqlite's.
 */
export interface StoreOpenOptions {
  create: "never" | "if-missing" | "must-not-exist";
  durability: Durability;
  readonly?: boolean;
  /** The placement store's mirror on PostgreSQL (a ":memory:" database; see pg/placement-mirror.ts). */
  sink?: OpenDatabaseOptions["sink"];
}

export function openStore(
  path: string,
  kind: "placement" | "payload" | "token-tracker",
  migrations: readonly string[],
  o: StoreOpenOptions,
): SqliteDatabase {
  return openDatabase({ path, migrations, kind, label: `${kind} store`, privateFile: true, ...o });
}
