export type {
  BackendStats,
  LeaseInfo,
  Page,
  ProvisionEntry,
} from "../../core/backend-contract/index.ts";
export {
  BackendClient,
  type BackendClientOptions,
  type Inventory,
  type ProvisionRequest,
  type StoragePage,
} from "./client.ts";
export {
  type AmbiguousReason,
  BackendTransport,
  classifyMutation,
  countsAsFailure,
  encodeQuery,
  type MutationOutcome,
} from "./http.ts";
export {
  type BackendCallObserver,
  createBackendCallMetrics,
  registerFleetGauges,
  silentCalls,
} from "./metrics.ts";
export { closeBackendClients, createBackendClients } from "./registry.ts";
