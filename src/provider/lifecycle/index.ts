export { type CloseResult, Closer, DEFAULT_CLOSE_RETRY, leaseEnded } from "./closer.ts";
export { type DomainPush, pushCustomDomains } from "./custom-domains.ts";
export { isBillingOnly, type LifecycleDeps, type LifecycleObserver, silentObserver } from "./deps.ts";
export { Lifecycle, type LifecycleEvents, type LifecycleOptions, type RecoverFn } from "./lifecycle.ts";
export { endLeasesOnLostBackends, type LostPassReport } from "./lost-backends.ts";
export { leaseItems, leaseRequest, Provisioner, type ProvisionStep } from "./provisioner.ts";
export { REJECT_REASONS, rejectionForFailure, rejectionForRefusal } from "./reasons.ts";
export {
  type Applied,
  type ApplyResult,
  applyCallback,
  type ChainAction,
  sendChainAction,
  type VerifiedCallback,
} from "./settle.ts";
export { checkOverdueAttempts, type TimeoutVerdict } from "./timeouts.ts";
