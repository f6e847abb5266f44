export { controlSocketPath, listenControlSocket, providerdListening, requestSweep } from "./control.ts";
export { type InventoryReadiness, READY_INVENTORY } from "./readiness.ts";
export {
  Reconciler,
  type ReconcilerDeps,
  type SweepOutcome,
  type SweepReport,
  type SweepSummary,
} from "./reconciler.ts";
