import { isIP } from "node:net";
import { z } from "zod";
import { COIN_RE, DENOM_RE } from "../../core/coin.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import {
  bool,
  duration,
  int,
  list,
  num,
  oneOf,
  optionalList,
  optionalPath,
  optionalText,
  positiveDuration,
  required,
  secret,
  text,
} from "./fields.ts";
import { camelize } from "./introspect.ts";
import { parseBackendOrigin, parseCallbackBase, type UrlCheck } from "./urls.ts";

/**
 * The keys of providerd's configuration file: the reference's snake_case names (required,
 * full and advanced tables, in that order) plus our extensions, each with its kind,
 * default and the rules about its own value. Rules across keys (production mode, unique
 * keys, routing) are in validate.ts and validate-backends.ts; load.ts joins both into
 * the one schema and infers the config object from it. Keys whose feature is not built
 * yet stay here, so their type and rules are ready, but the loader refuses them
 * (refused.ts).
 */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
const KEYRING_BACKENDS = ["file", "test"] as const;
const PRINTABLE = /^[^\p{Cc}\p{Cs}\p{Co}\p{Cn}]+$/u;
const WEBSOCKET_URL = /^(wss?):\/\/([^/?#@\s]+)(\/[^?#\s]*)?$/;
const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/;

/** Turns a URL rule's verdict into the field's value or an issue. */
function parsed<T>(check: (text: string) => UrlCheck<T>) {
  return (value: string, ctx: z.RefinementCtx): T => {
    const r = check(value);
    if (r.ok) return r.value;
    ctx.addIssue({ code: "custom", message: r.problem });
    return z.NEVER;
  };
}

function isCidr(value: string): boolean {
  const slash = value.indexOf("/");
  if (slash < 0) return false;
  const family = isIP(value.slice(0, slash));
  const bits = value.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

const listenAddr = text().superRefine((value, ctx) => {
  const m = LISTEN.exec(value);
  if (!m) ctx.addIssue({ code: "custom", message: 'must be "host:port" or ":port"' });
  else if (Number(m[2]) > 65535)
    ctx.addIssue({ code: "custom", message: "port must be between 0 and 65535" });
});

/** A listen address, or "" for a listener that is off. */
const optionalListenAddr = text().superRefine((value, ctx) => {
  if (value === "") return;
  const m = LISTEN.exec(value);
  if (!m) ctx.addIssue({ code: "custom", message: 'must be "host:port", ":port" or "" (off)' });
  else if (Number(m[2]) > 65535)
    ctx.addIssue({ code: "custom", message: "port must be between 0 and 65535" });
});

const coin = () => text().regex(COIN_RE, "must be an amount with denomination, e.g. 10000000umfx");
const positiveInt = () => int().positive("must be greater than zero");
const positiveNum = () => num().positive("must be greater than zero");

export const backendFields = z.strictObject(
  {
    name: text().refine(
      (n) => n !== "" && n.trim() === n && PRINTABLE.test(n),
      "must be non-blank printable text without leading or trailing whitespace",
    ),
    url: text().transform(parsed(parseBackendOrigin)),
    hmac_secret: secret(text()).prefault(""),
    hmac_secret_previous: secret(text()).prefault(""),
    skus: list().prefault([]),
    default: bool().prefault(false),
    timeout: positiveDuration().prefault("30s"),
    tls_ca_file: text().prefault(""),
    tls_skip_verify: bool().prefault(false),
    tls_client_cert_file: text().prefault(""),
    tls_client_key_file: text().prefault(""),
    fenced: bool().prefault(false),
    draining: bool().prefault(false),
  },
  { error: (issue) => (issue.code === "invalid_type" ? "must be a mapping of backend keys" : undefined) },
);

const backendSchema = backendFields.transform(({ url, default: isDefault, ...rest }) => ({
  ...camelize(backendFields, rest),
  /** Origin without trailing slash, e.g. "http://127.0.0.1:9001", or "unix:/run/fred/backend.sock". */
  url: url.origin,
  scheme: url.scheme,
  host: url.host,
  /** A co-located backend's socket path ("" for an http(s) url). */
  socketPath: url.socketPath,
  /** `default: true` in the file: fallback for SKUs no backend lists. */
  isDefault,
}));

export const fileFields = z.strictObject({
  // Required identity and topology (backends come last, see below).
  provider_uuid: required().refine(
    (u) => u === "" || isCanonicalUuid(u),
    "must be a canonical lowercase UUID",
  ),
  provider_address: required(),
  keyring_dir: required(),
  key_name: required(),
  // May be left out where providerd can derive it from its bound API address (see checkCallback).
  callback_base_url: required()
    .optional()
    .transform((v, ctx) => (v === undefined ? undefined : parsed(parseCallbackBase)(v, ctx))),
  // Required unless database_url keeps the stores in PostgreSQL (validate.ts).
  placement_store_db_path: optionalPath(),
  billing_only_skus: list().prefault([]),

  // Full configuration reference.
  log_level: oneOf(LOG_LEVELS).prefault("info"),
  production_mode: bool().prefault(false),
  chain_id: text().min(1, "must not be empty").prefault("manifest-1"),
  // Accepted at their defaults only: providerd reads the chain through CometBFT RPC.
  grpc_endpoint: text().prefault("localhost:9090"),
  websocket_url: text()
    .regex(WEBSOCKET_URL, "must be a ws:// or wss:// URL")
    .prefault("ws://localhost:26657/websocket"),
  grpc_tls_enabled: bool().prefault(false),
  grpc_tls_ca_file: text().prefault(""),
  grpc_tls_skip_verify: bool().prefault(false),
  // The reference's "os" is refused by the schema, so --check-config says so before a start would.
  keyring_backend: oneOf(KEYRING_BACKENDS, {
    os: 'is "os" (the system secret service), which Fred does not support: use "file" (encrypted, passphrase in FRED_KEYRING_PASSPHRASE) or "test" (plaintext, development only)',
  }).prefault("file"),
  api_listen_addr: listenAddr.prefault(":8080"),
  tls_cert_file: optionalText(),
  tls_key_file: optionalText(),
  withdraw_interval: positiveDuration().prefault("1h"),
  bech32_prefix: text()
    .regex(/^[a-z0-9]{1,83}$/, "must be lowercase letters and digits")
    .prefault("manifest"),
  rate_limit_rps: positiveNum().prefault(10),
  rate_limit_burst: positiveInt().prefault(20),
  tenant_rate_limit_rps: num().nonnegative("must not be negative").prefault(5),
  tenant_rate_limit_burst: int().nonnegative("must not be negative").prefault(10),
  trusted_proxies: optionalList(text().refine(isCidr, "must be a CIDR block such as 10.0.0.0/8")),
  cors_origins: list().prefault(["*"]),
  callback_secret: secret(optionalText()),
  callback_canonical_path_prefix: optionalText(),
  reconciliation_interval: positiveDuration().prefault("5m"),
  token_tracker_db_path: optionalPath(),
  payload_store_db_path: optionalPath(),
  placement_snapshot_dir: text().prefault(""),
  placement_snapshot_interval: duration().prefault("1h"),
  placement_snapshot_retain: int().prefault(24),
  // providerd on PostgreSQL with standbys (issue #36; docs/operator-guide.md "High
  // availability"): every store in one database, one leader among the instances.
  database_url: optionalPath(),
  database_password_file: optionalPath(),
  state_dir: optionalPath(),
  ha_advertise_url: optionalPath(),
  maintenance_legacy_idempotency_tenants: optionalList(),
  max_request_body_size: positiveInt().prefault(1_048_576),

  // Advanced configuration.
  http_read_timeout: positiveDuration().prefault("15s"),
  http_write_timeout: positiveDuration().prefault("15s"),
  http_idle_timeout: positiveDuration().prefault("60s"),
  websocket_ping_interval: positiveDuration().prefault("30s"),
  websocket_reconnect_initial: positiveDuration().prefault("1s"),
  websocket_reconnect_max: positiveDuration().prefault("60s"),
  tx_poll_interval: positiveDuration().prefault("500ms"),
  tx_timeout: positiveDuration().prefault("30s"),
  query_page_limit: positiveInt().prefault(100),
  max_withdraw_iterations: positiveInt().prefault(100),
  withdraw_limit: int()
    .min(1, "must be between 1 and 100")
    .max(100, "must be between 1 and 100")
    .prefault(100),
  gas_limit: positiveInt().prefault(1_500_000),
  gas_adjustment: num()
    .min(1, "must be between 1.0 and 3.0")
    .max(3, "must be between 1.0 and 3.0")
    .prefault(1.2),
  max_gas_limit: int().nonnegative("must not be negative").prefault(0),
  gas_price: positiveNum().prefault(25),
  fee_denom: text().regex(DENOM_RE, "must be a valid denomination such as umfx").prefault("umfx"),
  sub_signer_count: int().nonnegative("must not be negative").prefault(0),
  sub_signer_min_balance: coin().prefault("10000000umfx"),
  sub_signer_top_up_amount: coin().prefault("50000000umfx"),
  sub_signer_fund_check_interval: positiveDuration().prefault("1h"),
  credit_check_interval: duration().prefault("0s"),
  credit_check_error_threshold: positiveInt().prefault(3),
  credit_check_retry_interval: positiveDuration().prefault("30s"),
  credit_check_zero_grace_period: duration().prefault("5m"),
  shutdown_timeout: positiveDuration().prefault("30s"),

  // Our extensions. rpc_url "" means: derived from websocket_url.
  rpc_url: text()
    .refine(
      (u) => u === "" || /^https?:\/\/[^/?#@\s]+(\/[^?#\s]*)?$/.test(u),
      "must be an http:// or https:// URL",
    )
    .prefault(""),
  provision_callback_timeout: positiveDuration().prefault("15m"),
  // No new block for this long: the event feed reconnects (and resyncs) even if its socket is open.
  event_stall_timeout: positiveDuration().prefault("15s"),
  // The seed fixes the callback budgets at 100/s, burst 200; a provider whose backends
  // finish provisions faster than that (large fleets, benchmarks) may raise them.
  callback_rate_limit_rps: positiveNum().prefault(100),
  callback_rate_limit_burst: positiveInt().prefault(200),
  // Per-lease usage gauges on /metrics, read from each backend's GET /usage (off: no polling).
  lease_usage_metrics: bool().prefault(false),
  // Tenant shells (GET /v1/leases/{uuid}/shell): on by default, bounded per lease, per
  // provider, in idle time, length and output rate.
  tenant_shell_enabled: bool().prefault(true),
  tenant_shell_sessions_per_lease: positiveInt().prefault(4),
  tenant_shell_sessions_total: positiveInt().prefault(64),
  tenant_shell_idle_timeout: positiveDuration().prefault("10m"),
  tenant_shell_max_duration: positiveDuration().prefault("1h"),
  tenant_shell_output_bytes_per_second: positiveInt().prefault(1_048_576),

  // The operator dashboard (docs/providerd.md "Operator dashboard"): its own listener, never
  // the tenant port; "" turns it off. The token file defaults to operator-token beside the
  // placement store (created 0600 on first start); the TLS pair serves HTTPS and a client
  // CA requires a client certificate it signed.
  operator_listen_addr: optionalListenAddr.prefault("127.0.0.1:8081"),
  operator_token_file: text().prefault(""),
  operator_tls_cert_file: optionalText(),
  operator_tls_key_file: optionalText(),
  operator_client_ca_file: optionalText(),

  // Last, so problems read top-level keys first, then each backend in turn.
  backends: z
    .array(backendSchema, {
      error: (issue) => (issue.input === undefined ? "is required" : "must be a list of backend entries"),
    })
    .nullable()
    .transform((b) => b ?? [])
    .refine((b) => b.length > 0, "must list at least one backend"),
});

export type FileConfig = z.output<typeof fileFields>;
/** One validated `backends[]` entry. */
export type BackendConfig = z.output<typeof backendSchema>;

/** The CometBFT RPC URL: rpc_url, or websocket_url with ws→http and `/websocket` dropped. */
export function rpcUrlOf(file: Pick<FileConfig, "rpc_url" | "websocket_url">): string {
  const m = WEBSOCKET_URL.exec(file.websocket_url);
  const derived = m
    ? `${m[1] === "wss" ? "https" : "http"}://${m[2]}${(m[3] ?? "").replace(/\/websocket\/?$/, "")}`
    : "";
  return (file.rpc_url || derived).replace(/\/+$/, "");
}
