export {
  type Durability,
  type OpenDatabaseOptions,
  openDatabase,
  ReadMemo,
  type SqliteDatabase,
} from "./open.ts";
