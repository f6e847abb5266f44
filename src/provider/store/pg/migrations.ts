import { INBOX_MIGRATION } from "../../ha/inbox.ts";
import { LEADER_ADDRESS_MIGRATION, LEADER_LEASE_MIGRATION } from "../../ha/leader-lease.ts";
import { PAYLOADS_MIGRATION } from "./payload-store.ts";
import { PLACEMENT_MIRROR_MIGRATION } from "./placement-mirror.ts";
import { USED_TOKENS_MIGRATION } from "./token-tracker.ts";

/**
 * providerd's schema on PostgreSQL: every table of one provider's instances in one
 * database, numbered append-only migrations (src/pg/open.ts applies them). The SQLite
 * stores keep their own migration sets, one per file.
 */
export const PROVIDERD_PG_MIGRATIONS: readonly string[] = [
  LEADER_LEASE_MIGRATION,
  USED_TOKENS_MIGRATION,
  PAYLOADS_MIGRATION,
  PLACEMENT_MIRROR_MIGRATION,
  LEADER_ADDRESS_MIGRATION,
  INBOX_MIGRATION,
];
