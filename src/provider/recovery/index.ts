export { type RecoveryReport, runRecovery } from "./pass.ts";
export { Recovery, type RecoveryDeps } from "./recovery.ts";
