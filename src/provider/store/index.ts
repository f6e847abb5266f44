export {
  BackendFleet,
  type BackendPin,
  type InventoryBaseline,
  type LeaseRooms,
  type NewBackendPin,
  onLostBackend,
} from "./backend-fleet.ts";
export { CopyMarks } from "./copy-marks.ts";
export { type OpenStores, type ProviderStores, sqliteStores } from "./open-stores.ts";
export {
  type PayloadRecords,
  type PutResult,
  type StoredPayload,
  sha256Hex,
} from "./payload-records.ts";
export { PayloadStore } from "./payload-store.ts";
export { PROVIDERD_PG_MIGRATIONS } from "./pg/migrations.ts";
export { PgPayloadStore } from "./pg/payload-store.ts";
export {
  createPlacementsOnPostgres,
  MIRRORED_TABLES,
  openPlacementsOnPostgres,
  type PlacementDatabase,
} from "./pg/placement-mirror.ts";
export { STORE_FILES, type StoreFile } from "./pg/store-files.ts";
export {
  columnNames,
  type Row,
  readPgRows,
  readSqliteRows,
  type TableMap,
  tableDigest,
  upsertPgRows,
} from "./pg/tables.ts";
export { PgTokenTracker } from "./pg/token-tracker.ts";
export type {
  Attempt,
  AttemptKind,
  InventoryOutcome,
  Placement,
  PlacementTuple,
  RecordResult,
  SettleResult,
} from "./placement-records.ts";
export { PlacementStore } from "./placement-store.ts";
export { Placements } from "./placements.ts";
export type { ReplayStore } from "./replay-store.ts";
export { type RetainedRecord, RetainedRows } from "./retained-rows.ts";
export { backupBeside, fileStamp, type SnapshotSet, snapshotSets, takeSnapshot } from "./snapshot.ts";
export { SnapshotSchedule, scheduleSnapshots } from "./snapshot-schedule.ts";
export { openStore } from "./sqlite.ts";
export { TokenTracker } from "./token-tracker.ts";
