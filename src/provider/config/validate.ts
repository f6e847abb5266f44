import { isIP } from "node:net";
import { isAbsolute, normalize, resolve } from "node:path";
import { isAccountAddress } from "../../auth/address.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { DecodedConfig } from "./decode.ts";
import { type CallbackBase, isLocalOnlyHost, parseCallbackBase } from "./urls.ts";

/**
 * Rules over the top-level keys. Each problem is one sentence naming the key; tests
 * assert the wording verbatim. Values that failed structural decoding are absent and
 * skipped here, so one bad value yields one message.
 */
const LOG_LEVELS = ["debug", "info", "warn", "error"];
const KEYRING_BACKENDS = ["file", "os", "test"];
const COIN = /^\d+[a-zA-Z][a-zA-Z0-9/:._-]{2,127}$/;
const DENOM = /^[a-zA-Z][a-zA-Z0-9/:._-]{2,127}$/;

export interface TopLevelResult {
  callbackBase: CallbackBase | undefined;
  rpcUrl: string;
}

export function checkTopLevel(d: DecodedConfig, problems: string[]): TopLevelResult {
  const v = d.top;
  const get = <T>(key: string): T | undefined => v.get(key) as T | undefined;
  const has = (key: string) => v.has(key);
  const required = (key: string) => {
    if (d.broken.has(key)) return;
    if (!has(key) || get<string>(key) === "") problems.push(`${key} is required`);
  };
  for (const key of ["provider_uuid", "provider_address", "keyring_dir", "key_name", "callback_base_url"]) {
    required(key);
  }
  if (!d.broken.has("placement_store_db_path") && !get<string>("placement_store_db_path")) {
    problems.push("placement_store_db_path is required (create the store with `fred placement init`)");
  }
  if (!d.present.has("backends") && !d.broken.has("backends")) problems.push("backends is required");

  const uuid = get<string>("provider_uuid");
  if (uuid && !isCanonicalUuid(uuid)) problems.push("provider_uuid must be a canonical lowercase UUID");
  const prefix = get<string>("bech32_prefix") ?? "manifest";
  if (!/^[a-z0-9]{1,83}$/.test(prefix)) problems.push("bech32_prefix must be lowercase letters and digits");
  const address = get<string>("provider_address");
  if (address && !isAccountAddress(address, prefix)) {
    problems.push(`provider_address must be a bech32 account address with prefix "${prefix}"`);
  }
  const level = get<string>("log_level");
  if (level !== undefined && !LOG_LEVELS.includes(level)) {
    problems.push(`log_level must be one of ${LOG_LEVELS.join(", ")}`);
  }
  const keyring = get<string>("keyring_backend");
  if (keyring !== undefined && !KEYRING_BACKENDS.includes(keyring)) {
    problems.push(`keyring_backend must be one of ${KEYRING_BACKENDS.join(", ")}`);
  }
  if (get<string>("chain_id") === "") problems.push("chain_id must not be empty");

  const production = get<boolean>("production_mode") === true;
  const callbackBase = checkCallback(get, production, problems);
  const rpcUrl = checkChainEndpoints(get, production, problems);
  checkApi(get, problems);
  checkStores(get, production, problems);
  checkNumbers(get, problems);
  checkTenants(get<string[]>("maintenance_legacy_idempotency_tenants"), prefix, problems);
  return { callbackBase, rpcUrl };
}

type Getter = <T>(key: string) => T | undefined;

function checkCallback(get: Getter, production: boolean, problems: string[]): CallbackBase | undefined {
  const text = get<string>("callback_base_url");
  if (!text) return undefined;
  const parsed = parseCallbackBase(text);
  if (!parsed.ok) {
    problems.push(parsed.problem);
    return undefined;
  }
  const base = parsed.value;
  if (production && base.scheme !== "https")
    problems.push("callback_base_url must use https:// in production_mode");
  if (production && isLocalOnlyHost(base.host)) {
    problems.push(
      "callback_base_url must not point at a loopback, link-local or unspecified address in production_mode",
    );
  }
  const prefix = get<string>("callback_canonical_path_prefix") ?? "";
  if (prefix !== base.path) {
    problems.push(
      `callback_canonical_path_prefix must equal the path of callback_base_url (${JSON.stringify(base.path)}), got ${JSON.stringify(prefix)}`,
    );
  }
  return base;
}

function checkChainEndpoints(get: Getter, production: boolean, problems: string[]): string {
  const ws = get<string>("websocket_url") ?? "";
  let derived = "";
  const m = /^(wss?):\/\/([^/?#@\s]+)(\/[^?#\s]*)?$/.exec(ws);
  if (!m) problems.push("websocket_url must be a ws:// or wss:// URL");
  else {
    const path = (m[3] ?? "").replace(/\/websocket\/?$/, "");
    derived = `${m[1] === "wss" ? "https" : "http"}://${m[2]}${path}`;
  }
  const rpc = get<string>("rpc_url") ?? "";
  if (rpc !== "" && !/^https?:\/\/[^/?#@\s]+(\/[^?#\s]*)?$/.test(rpc)) {
    problems.push("rpc_url must be an http:// or https:// URL");
  }
  if (production && get<boolean>("grpc_tls_enabled") && get<boolean>("grpc_tls_skip_verify")) {
    problems.push("grpc_tls_skip_verify is not allowed in production_mode");
  }
  return (rpc || derived).replace(/\/+$/, "");
}

function checkApi(get: Getter, problems: string[]): void {
  const listen = get<string>("api_listen_addr");
  if (listen !== undefined && !/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):\d{1,5}$/.test(listen)) {
    problems.push('api_listen_addr must be "host:port" or ":port"');
  } else if (listen !== undefined && Number(listen.slice(listen.lastIndexOf(":") + 1)) > 65535) {
    problems.push("api_listen_addr port must be between 0 and 65535");
  }
  if (!get<string>("tls_cert_file") !== !get<string>("tls_key_file")) {
    problems.push("tls_cert_file and tls_key_file must be set together");
  }
  for (const [j, cidr] of (get<string[]>("trusted_proxies") ?? []).entries()) {
    if (!isCidr(cidr)) problems.push(`trusted_proxies[${j}] must be a CIDR block such as 10.0.0.0/8`);
  }
}

function isCidr(text: string): boolean {
  const slash = text.indexOf("/");
  if (slash < 0) return false;
  const family = isIP(text.slice(0, slash));
  const bits = text.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

function checkStores(get: Getter, production: boolean, problems: string[]): void {
  const placement = get<string>("placement_store_db_path") || "";
  const payload = get<string>("payload_store_db_path") || "";
  const tracker = get<string>("token_tracker_db_path") || "";
  if (production && tracker === "") problems.push("production_mode requires token_tracker_db_path");
  const paths = [
    ["placement_store_db_path", placement],
    ["payload_store_db_path", payload],
    ["token_tracker_db_path", tracker],
  ].filter(([, p]) => p !== "");
  for (let i = 0; i < paths.length; i++) {
    for (let j = i + 1; j < paths.length; j++) {
      if (resolve(paths[i]![1]!) === resolve(paths[j]![1]!)) {
        problems.push(`${paths[i]![0]} and ${paths[j]![0]} must be different files`);
      }
    }
  }
  const snapDir = get<string>("placement_snapshot_dir") ?? "";
  if (snapDir !== "") {
    if (!isAbsolute(snapDir) || normalize(snapDir).replace(/\/$/, "") !== snapDir.replace(/\/$/, "")) {
      problems.push("placement_snapshot_dir must be an absolute, clean path");
    }
    if (payload === "") problems.push("placement_snapshot_dir requires payload_store_db_path");
    for (const db of [placement, payload].filter((p) => p !== "")) {
      if (resolve(db, "..") === resolve(snapDir)) {
        problems.push("placement_snapshot_dir must not be the directory of a live database");
        break;
      }
    }
    const interval = get<number>("placement_snapshot_interval");
    if (interval !== undefined && interval < 5 * 60_000) {
      problems.push("placement_snapshot_interval must be at least 5m");
    }
    const retain = get<number>("placement_snapshot_retain");
    if (retain !== undefined && (retain < 1 || retain > 1000)) {
      problems.push("placement_snapshot_retain must be between 1 and 1000");
    }
  }
}

function checkNumbers(get: Getter, problems: string[]): void {
  const positive = (key: string) => {
    const n = get<number>(key);
    if (n !== undefined && !(n > 0)) problems.push(`${key} must be greater than zero`);
  };
  const nonNegative = (key: string) => {
    const n = get<number>(key);
    if (n !== undefined && n < 0) problems.push(`${key} must not be negative`);
  };
  for (const key of [
    "withdraw_interval",
    "reconciliation_interval",
    "http_read_timeout",
    "http_write_timeout",
    "http_idle_timeout",
    "websocket_ping_interval",
    "websocket_reconnect_initial",
    "websocket_reconnect_max",
    "tx_poll_interval",
    "tx_timeout",
    "sub_signer_fund_check_interval",
    "credit_check_retry_interval",
    "shutdown_timeout",
    "provision_callback_timeout",
    "rate_limit_rps",
    "rate_limit_burst",
    "callback_rate_limit_rps",
    "callback_rate_limit_burst",
    "query_page_limit",
    "max_withdraw_iterations",
    "gas_limit",
    "gas_price",
    "max_request_body_size",
    "credit_check_error_threshold",
  ]) {
    positive(key);
  }
  for (const key of [
    "tenant_rate_limit_rps",
    "tenant_rate_limit_burst",
    "max_gas_limit",
    "sub_signer_count",
  ]) {
    nonNegative(key);
  }
  const initial = get<number>("websocket_reconnect_initial");
  const max = get<number>("websocket_reconnect_max");
  if (initial !== undefined && max !== undefined && initial > max) {
    problems.push("websocket_reconnect_initial must not exceed websocket_reconnect_max");
  }
  const withdrawLimit = get<number>("withdraw_limit");
  if (withdrawLimit !== undefined && (withdrawLimit < 1 || withdrawLimit > 100)) {
    problems.push("withdraw_limit must be between 1 and 100");
  }
  const adj = get<number>("gas_adjustment");
  if (adj !== undefined && (adj < 1 || adj > 3)) problems.push("gas_adjustment must be between 1.0 and 3.0");
  const maxGas = get<number>("max_gas_limit");
  const gas = get<number>("gas_limit");
  if (maxGas !== undefined && gas !== undefined && maxGas > 0 && maxGas < gas) {
    problems.push("max_gas_limit must be 0 (uncapped) or at least gas_limit");
  }
  const credit = get<number>("credit_check_interval");
  const withdraw = get<number>("withdraw_interval");
  if (credit !== undefined && withdraw !== undefined && credit > withdraw) {
    problems.push("credit_check_interval must not exceed withdraw_interval (0s couples them)");
  }
  const denom = get<string>("fee_denom");
  if (denom !== undefined && !DENOM.test(denom))
    problems.push("fee_denom must be a valid denomination such as umfx");
  for (const key of ["sub_signer_min_balance", "sub_signer_top_up_amount"]) {
    const coin = get<string>(key);
    if (coin !== undefined && !COIN.test(coin))
      problems.push(`${key} must be an amount with denomination, e.g. 10000000umfx`);
  }
}

function checkTenants(tenants: string[] | undefined, prefix: string, problems: string[]): void {
  const seen = new Set<string>();
  for (const [j, t] of (tenants ?? []).entries()) {
    if (!isAccountAddress(t, prefix) || t !== t.toLowerCase()) {
      problems.push(
        `maintenance_legacy_idempotency_tenants[${j}] must be a bech32 account address with prefix "${prefix}"`,
      );
    } else if (seen.has(t)) problems.push(`maintenance_legacy_idempotency_tenants lists ${t} more than once`);
    seen.add(t);
  }
}
