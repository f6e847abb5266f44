export {
  type Durability,
  ExistsMemo,
  type OpenDatabaseOptions,
  openDatabase,
  type SqliteDatabase,
} from "./open.ts";
