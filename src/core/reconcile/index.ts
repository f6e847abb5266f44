export {
  classifyState,
  isBillingOnlyLease,
  mergeListings,
  type Reread,
  type RereadRefusal,
  rereadGate,
  rereadPermitsDestruction,
} from "./chain-state.ts";
export {
  budgetReads,
  type InventoryHalf,
  type PairInput,
  type ProvisionRow,
  pairInventories,
} from "./collect.ts";
export { REASONS } from "./live.ts";
export { type Plan, plan } from "./plan.ts";
export { RETENTION_MISSES_TO_RETIRE } from "./retention.ts";
export { DEFERRING_ROWS, ROWS, type Row } from "./rows.ts";
export {
  type Action,
  type ActionKind,
  type AttemptView,
  type BackendView,
  type ChainLeaseView,
  type CleanupPass,
  type CleanupSkip,
  type CustomDomain,
  type DestructiveAction,
  isDestructive,
  type PayloadSource,
  type PlacementView,
  type PlanInput,
  type ProvisionObservation,
  type ProvisionTarget,
  type QuarantineReason,
  REREAD_GATE,
  type RetainedView,
  type SkipReason,
  type StoreView,
} from "./types.ts";
