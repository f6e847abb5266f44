/**
 * Every top-level key providerd accepts, with its value kind and built-in default. The
 * table mirrors the reference's required, full and advanced configuration tables (same
 * snake_case names and defaults) plus our documented extensions. Keys whose feature is
 * built later are accepted and validated now, so a config file written today keeps
 * working when the feature lands.
 */
export type ValueKind = "string" | "bool" | "int" | "number" | "duration" | "stringList" | "backends";

export interface KeySpec {
  kind: ValueKind;
  /**
   * Built-in default in file syntax. `undefined` means the key has no default: it is
   * either required or optional-empty, and a `PROVIDER_<KEY>` variable may only override
   * it when the file sets it.
   */
  default?: string | number | boolean | readonly string[];
  required?: boolean;
}

export const TOP_LEVEL_KEYS: Readonly<Record<string, KeySpec>> = {
  // Required identity and topology.
  provider_uuid: { kind: "string", required: true },
  provider_address: { kind: "string", required: true },
  keyring_dir: { kind: "string", required: true },
  key_name: { kind: "string", required: true },
  backends: { kind: "backends", required: true },
  callback_base_url: { kind: "string", required: true },
  placement_store_db_path: { kind: "string", required: true },
  billing_only_skus: { kind: "stringList", default: [] },

  // Full configuration reference.
  log_level: { kind: "string", default: "info" },
  production_mode: { kind: "bool", default: false },
  chain_id: { kind: "string", default: "manifest-1" },
  grpc_endpoint: { kind: "string", default: "localhost:9090" },
  websocket_url: { kind: "string", default: "ws://localhost:26657/websocket" },
  grpc_tls_enabled: { kind: "bool", default: false },
  grpc_tls_ca_file: { kind: "string", default: "" },
  grpc_tls_skip_verify: { kind: "bool", default: false },
  keyring_backend: { kind: "string", default: "file" },
  api_listen_addr: { kind: "string", default: ":8080" },
  tls_cert_file: { kind: "string" },
  tls_key_file: { kind: "string" },
  withdraw_interval: { kind: "duration", default: "1h" },
  bech32_prefix: { kind: "string", default: "manifest" },
  rate_limit_rps: { kind: "number", default: 10 },
  rate_limit_burst: { kind: "int", default: 20 },
  tenant_rate_limit_rps: { kind: "number", default: 5 },
  tenant_rate_limit_burst: { kind: "int", default: 10 },
  trusted_proxies: { kind: "stringList" },
  cors_origins: { kind: "stringList", default: ["*"] },
  callback_secret: { kind: "string" },
  callback_canonical_path_prefix: { kind: "string" },
  reconciliation_interval: { kind: "duration", default: "5m" },
  token_tracker_db_path: { kind: "string" },
  payload_store_db_path: { kind: "string" },
  placement_snapshot_dir: { kind: "string", default: "" },
  placement_snapshot_interval: { kind: "duration", default: "1h" },
  placement_snapshot_retain: { kind: "int", default: 24 },
  maintenance_legacy_idempotency_tenants: { kind: "stringList" },
  max_request_body_size: { kind: "int", default: 1_048_576 },

  // Advanced configuration.
  http_read_timeout: { kind: "duration", default: "15s" },
  http_write_timeout: { kind: "duration", default: "15s" },
  http_idle_timeout: { kind: "duration", default: "60s" },
  websocket_ping_interval: { kind: "duration", default: "30s" },
  websocket_reconnect_initial: { kind: "duration", default: "1s" },
  websocket_reconnect_max: { kind: "duration", default: "60s" },
  tx_poll_interval: { kind: "duration", default: "500ms" },
  tx_timeout: { kind: "duration", default: "30s" },
  query_page_limit: { kind: "int", default: 100 },
  max_withdraw_iterations: { kind: "int", default: 100 },
  withdraw_limit: { kind: "int", default: 100 },
  gas_limit: { kind: "int", default: 1_500_000 },
  gas_adjustment: { kind: "number", default: 1.2 },
  max_gas_limit: { kind: "int", default: 0 },
  gas_price: { kind: "number", default: 25 },
  fee_denom: { kind: "string", default: "umfx" },
  sub_signer_count: { kind: "int", default: 0 },
  sub_signer_min_balance: { kind: "string", default: "10000000umfx" },
  sub_signer_top_up_amount: { kind: "string", default: "50000000umfx" },
  sub_signer_fund_check_interval: { kind: "duration", default: "1h" },
  credit_check_interval: { kind: "duration", default: "0s" },
  credit_check_error_threshold: { kind: "int", default: 3 },
  credit_check_retry_interval: { kind: "duration", default: "30s" },
  credit_check_zero_grace_period: { kind: "duration", default: "5m" },
  shutdown_timeout: { kind: "duration", default: "30s" },

  // Our extensions. rpc_url's default is derived from websocket_url, so it counts as
  // having a default for environment overrides.
  rpc_url: { kind: "string", default: "" },
  provision_callback_timeout: { kind: "duration", default: "15m" },
  // The seed fixes the callback budgets at 100/s, burst 200; a provider whose backends
  // finish provisions faster than that (large fleets, benchmarks) may raise them.
  callback_rate_limit_rps: { kind: "number", default: 100 },
  callback_rate_limit_burst: { kind: "int", default: 200 },
};

/** Keys of one `backends[]` entry. */
export const BACKEND_KEYS: Readonly<Record<string, KeySpec>> = {
  name: { kind: "string", required: true },
  url: { kind: "string", required: true },
  hmac_secret: { kind: "string", default: "" },
  hmac_secret_previous: { kind: "string", default: "" },
  skus: { kind: "stringList", default: [] },
  default: { kind: "bool", default: false },
  timeout: { kind: "duration", default: "30s" },
  tls_ca_file: { kind: "string", default: "" },
  tls_skip_verify: { kind: "bool", default: false },
  tls_client_cert_file: { kind: "string", default: "" },
  tls_client_key_file: { kind: "string", default: "" },
  fenced: { kind: "bool", default: false },
  draining: { kind: "bool", default: false },
};

/** Secret-bearing keys: never logged in clear. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  "callback_secret",
  "hmac_secret",
  "hmac_secret_previous",
]);

/** The environment variable that overrides `key`. */
export function envName(key: string): string {
  return `PROVIDER_${key.toUpperCase()}`;
}
