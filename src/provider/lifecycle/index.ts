// The lifecycle's public face: the Lifecycle itself, what it is built from, and the types
// its callers exchange with it. Its workflows (Provisioner, Closer, settle, timeouts) stay
// inside this folder; their unit tests import them from their own files.
export { type LifecycleDeps, type LifecycleObserver, silentObserver } from "./deps.ts";
export { Lifecycle, type LifecycleEvents, type LifecycleOptions, type RecoverFn } from "./lifecycle.ts";
export { leaseRequest, type ProvisionOrder, type ProvisionStep } from "./provisioner.ts";
export { REJECT_REASONS } from "./reasons.ts";
export type { ApplyResult, VerifiedCallback } from "./settle.ts";
export { maskRunningPayloads } from "./settle.ts";
