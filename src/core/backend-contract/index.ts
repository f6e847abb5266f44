/**
 * The backend HTTP contract, once, for both sides: providerd's client and callback
 * ingress read with these schemas, and the backend kit serves, parses and builds with
 * them. docs/backend-contract.md describes the same contract in prose.
 */
export {
  type BackendErrorBody,
  backendError,
  parseBackendError,
  type ValidationCode,
} from "../envelope.ts";
export * from "./callback.ts";
export * from "./log-stream.ts";
export * from "./requests.ts";
export * from "./responses.ts";
export * from "./usage.ts";
