export { type AmbiguousReason, classifyMutation, countsAsFailure, type MutationOutcome } from "./classify.ts";
export {
  BackendClient,
  type BackendClientOptions,
  INVENTORY_PAGE_LIMIT,
  type Inventory,
  type ProvisionRequestBody,
  RESPONSE_CAPS,
  type StoragePage,
} from "./client.ts";
export type { BackendStats, LeaseInfo, Page, ProvisionEntry } from "./decode.ts";
export { BackendTransport, encodeQuery, STORAGE_HEADER } from "./http.ts";
export { closeBackendClients, createBackendClients } from "./registry.ts";
