export { registerSignerMetrics } from "./metrics.ts";
export { registerProviderBalance } from "./provider-balance.ts";
export { type Signers, startSigners, subSignerKeys } from "./signers.ts";
export { type PassOutcome, SignerSupervisor } from "./supervisor.ts";
