import { PAYLOAD_MIGRATIONS } from "../payload-store.ts";
import { PLACEMENT_MIGRATIONS } from "../placement-schema.ts";
import { TOKEN_TRACKER_MIGRATIONS } from "../token-tracker.ts";
import { PAYLOADS_TABLE } from "./payload-store.ts";
import { MIRRORED_TABLES } from "./placement-mirror.ts";
import type { TableMap } from "./tables.ts";
import { USED_TOKENS_TABLE } from "./token-tracker.ts";

/**
 * providerd's three SQLite files, and which of providerd's PostgreSQL tables hold the
 * same rows: what `fred placement migrate` moves one way or the other.
 */
export interface StoreFile {
  kind: "placement" | "payload" | "token-tracker";
  /** Its name in a directory of `--to sqlite:<dir>`. */
  file: string;
  migrations: readonly string[];
  tables: readonly TableMap[];
}

export const STORE_FILES: readonly StoreFile[] = [
  { kind: "placement", file: "placements.db", migrations: PLACEMENT_MIGRATIONS, tables: MIRRORED_TABLES },
  { kind: "payload", file: "payloads.db", migrations: PAYLOAD_MIGRATIONS, tables: [PAYLOADS_TABLE] },
  {
    kind: "token-tracker",
    file: "tokens.db",
    migrations: TOKEN_TRACKER_MIGRATIONS,
    tables: [USED_TOKENS_TABLE],
  },
];
