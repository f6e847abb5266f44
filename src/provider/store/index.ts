export { GroupCommitter } from "./group-commit.ts";
export { openProviderStores, type ProviderStores } from "./open-stores.ts";
export { PayloadStore, type PutResult, type StoredPayload, sha256Hex } from "./payload-store.ts";
export {
  type Attempt,
  type AttemptKind,
  type BackendPin,
  type InventoryBaseline,
  type InventoryOutcome,
  type NewBackendPin,
  type Placement,
  PlacementStore,
  type RecordResult,
  type SettleResult,
} from "./placement-store.ts";
export { type RetainedRecord, RetainedRows } from "./retained-rows.ts";
export { backupBeside, fileStamp, type SnapshotSet, snapshotSets, takeSnapshot } from "./snapshot.ts";
export { SnapshotSchedule, scheduleSnapshots } from "./snapshot-schedule.ts";
export { TokenTracker } from "./token-tracker.ts";
