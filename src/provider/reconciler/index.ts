export { Reconciler, type ReconcilerDeps, type SweepOutcome, type SweepReport } from "./reconciler.ts";
