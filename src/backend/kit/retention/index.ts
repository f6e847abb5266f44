/** Retention of closed leases' data and its restore into new leases (issue 15, backend half). */
export {
  RETENTION_CRASH_POINTS,
  type RetentionCrashPoint,
  retentionCrashPoint,
} from "./crash-points.ts";
export { Retention, type RetentionOptions, type Teardown } from "./manager.ts";
export {
  DEFAULT_ORPHAN_CONFIRMATIONS,
  DEFAULT_RETENTION_MAX_AGE_MS,
  DEFAULT_RETENTION_REAP_INTERVAL_MS,
  decideRetention,
  extractPartition,
  normalizePartition,
  type PartitionSource,
  parsePartitionSource,
  type RetentionPolicy,
  type TenantBudget,
} from "./policy.ts";
export { admitRestore, type RestoreAdmission } from "./restore.ts";
export { type RetentionRow, type RetentionStatus, RetentionStore } from "./store.ts";
export { isListed, retainedInfo, retentionsPage } from "./views.ts";
