export {
  type Durability,
  type OpenDatabaseOptions,
  openDatabase,
  ReadMemo,
  type SqliteDatabase,
} from "./open.ts";
export type { CommitSink } from "./wal-durability.ts";
