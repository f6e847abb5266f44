/** Public surface of the backend kit: what a backend kind (mock, Docker, …) builds on. */

export { imageRefusal, isImageAllowed, parseRegistry, parseTenantManifest } from "./admission.ts";
export {
  type BackendKitOptions,
  DEFAULT_RECONCILE_INTERVAL_MS,
  DEFAULT_RELEASES_MAX_AGE_MS,
  DEFAULT_RESERVATION_TTL_MS,
  initializeStorageIdentity,
  type ListenAddress,
  type RunningBackend,
  startBackend,
} from "./backend.ts";
export { checkClientCaBundle } from "./client-tls.ts";
export { DEFAULT_DIAGNOSTICS_MAX_AGE_MS } from "./diagnostics.ts";
export { BackendEngine, type EngineEvent } from "./engine.ts";
export { badRequest, notFound, WireError } from "./errors.ts";
export { openJournalDatabase } from "./journal/identity.ts";
export { Journal, type LeaseRecord } from "./journal/journal.ts";
export { parseBackendListen, tlsOnSocketProblem } from "./listen-address.ts";
export { RECEIPT_WINDOW } from "./maintenance/store.ts";
export { type DestroyRefusal, destroysRefused } from "./ops-metrics.ts";
export { PeriodicPass } from "./periodic-pass.ts";
export {
  type PoolOptions,
  type PoolStats,
  type PoolTotals,
  ResourcePool,
  type TenantQuota,
} from "./resources.ts";
export * from "./retention/index.ts";
export { parseLeaseUuid } from "./server.ts";
export * from "./substrate.ts";
export { DEFAULT_USAGE_SAMPLE_INTERVAL_MS, UsageSampler } from "./usage/sampler.ts";
