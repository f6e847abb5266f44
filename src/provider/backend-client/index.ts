export type {
  BackendStats,
  LeaseInfo,
  Page,
  ProvisionEntry,
} from "../../core/backend-contract/index.ts";
export { type AmbiguousReason, classifyMutation, countsAsFailure, type MutationOutcome } from "./classify.ts";
export {
  BackendClient,
  type BackendClientOptions,
  type Inventory,
  type ProvisionRequest,
  type StoragePage,
} from "./client.ts";
export { BackendTransport, encodeQuery } from "./http.ts";
export { closeBackendClients, createBackendClients } from "./registry.ts";
