export { type Durability, type OpenDatabaseOptions, openDatabase, type SqliteDatabase } from "./open.ts";
