import type { CallbackBase } from "./urls.ts";

/**
 * providerd's validated configuration: camelCase, durations in milliseconds (`…Ms`),
 * deeply frozen. Built only by `loadProviderConfig`/`parseProviderConfig`.
 */
export interface BackendConfig {
  /** Stable durable identity of the backend (case-sensitive). */
  name: string;
  /** Origin without trailing slash, e.g. "http://127.0.0.1:9001". */
  url: string;
  scheme: "http" | "https";
  host: string;
  /** "" when the legacy fleet-wide callback_secret is used instead. */
  hmacSecret: string;
  hmacSecretPrevious: string;
  skus: readonly string[];
  /** `default: true` in the file: fallback for SKUs no backend lists. */
  isDefault: boolean;
  timeoutMs: number;
  tlsCaFile: string;
  tlsSkipVerify: boolean;
  tlsClientCertFile: string;
  tlsClientKeyFile: string;
  /** Untrusted: sent nothing, callbacks refused, no new leases. */
  fenced: boolean;
  /** Being emptied: no new leases, everything else served. */
  draining: boolean;
}

export interface ProviderConfig {
  providerUuid: string;
  providerAddress: string;
  keyringDir: string;
  keyName: string;
  keyringBackend: string;
  bech32Prefix: string;
  backends: readonly BackendConfig[];
  billingOnlySkus: readonly string[];

  callbackBaseUrl: string;
  callbackBase: CallbackBase;
  callbackSecret: string;
  callbackCanonicalPathPrefix: string;

  placementStoreDbPath: string;
  payloadStoreDbPath: string | undefined;
  tokenTrackerDbPath: string | undefined;
  placementSnapshotDir: string;
  placementSnapshotIntervalMs: number;
  placementSnapshotRetain: number;

  logLevel: "debug" | "info" | "warn" | "error";
  productionMode: boolean;

  chainId: string;
  websocketUrl: string;
  /** CometBFT RPC (extension); derived from websocket_url when not set. */
  rpcUrl: string;
  /** Accepted for compatibility with the reference; providerd talks CometBFT RPC only. */
  grpcEndpoint: string;
  grpcTlsEnabled: boolean;
  grpcTlsCaFile: string;
  grpcTlsSkipVerify: boolean;

  apiListenAddr: string;
  tlsCertFile: string;
  tlsKeyFile: string;
  rateLimitRps: number;
  rateLimitBurst: number;
  tenantRateLimitRps: number;
  tenantRateLimitBurst: number;
  trustedProxies: readonly string[];
  corsOrigins: readonly string[];
  maxRequestBodySize: number;
  maintenanceLegacyIdempotencyTenants: readonly string[];
  httpReadTimeoutMs: number;
  httpWriteTimeoutMs: number;
  httpIdleTimeoutMs: number;

  withdrawIntervalMs: number;
  reconciliationIntervalMs: number;
  websocketPingIntervalMs: number;
  websocketReconnectInitialMs: number;
  websocketReconnectMaxMs: number;
  txPollIntervalMs: number;
  txTimeoutMs: number;
  queryPageLimit: number;
  maxWithdrawIterations: number;
  withdrawLimit: number;
  gasLimit: number;
  gasAdjustment: number;
  maxGasLimit: number;
  gasPrice: number;
  feeDenom: string;
  subSignerCount: number;
  subSignerMinBalance: string;
  subSignerTopUpAmount: string;
  subSignerFundCheckIntervalMs: number;
  creditCheckIntervalMs: number;
  creditCheckErrorThreshold: number;
  creditCheckRetryIntervalMs: number;
  creditCheckZeroGracePeriodMs: number;
  shutdownTimeoutMs: number;
  /** Extension: ask the backend when no callback arrived within this long. */
  provisionCallbackTimeoutMs: number;
  /** Extension: the callback route's pre-auth (per IP) and per-storage budgets. */
  callbackRateLimitRps: number;
  callbackRateLimitBurst: number;
}
