export { registerSignerMetrics } from "./metrics.ts";
export { type Signers, startSigners, subSignerKeys } from "./signers.ts";
export { type PassOutcome, SignerSupervisor } from "./supervisor.ts";
