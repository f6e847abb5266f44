/** providerd's configuration: the schema, the loader and the URL helpers the daemon uses. */
export { ConfigError, type Env, envName } from "./decode.ts";
export {
  type CheckOptions,
  type CheckResult,
  checkProviderConfig,
  loadProviderConfig,
  type ProviderConfig,
  parseProviderConfig,
  providerConfigSchema,
  readConfigFile,
  withBoundCallbackBase,
} from "./load.ts";
export { redactConfig } from "./redact.ts";
export { REFUSED_KEYS, type Refusal, type RefusedKeys } from "./refused.ts";
export type { BackendConfig } from "./schema.ts";
export type { CallbackBase } from "./urls.ts";
export { EVERY_LEGACY_TENANT } from "./validate.ts";
