// PeriodicPass moved to core/async so providerd's usage-metrics poll shares it; the kit's
// modules keep importing it from here.
export { PeriodicPass } from "../../core/async/index.ts";
