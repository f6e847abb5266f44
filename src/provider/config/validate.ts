import { isAbsolute, normalize, resolve } from "node:path";
import { isAccountAddress } from "../../auth/address.ts";
import { parseCoin } from "../../core/coin.ts";
import { isLoopbackHost, splitHostPort } from "../../core/host-port.ts";
import type { FileConfig } from "./schema.ts";
import { isLocalOnlyHost } from "./urls.ts";

/**
 * Rules across top-level keys. They run on well-formed values only (each field's own
 * rules passed). Each problem is one sentence naming the key; tests assert the wording
 * verbatim.
 */
export function checkTopLevel(file: FileConfig, problems: string[]): void {
  const prefix = file.bech32_prefix;
  if (!isAccountAddress(file.provider_address, prefix)) {
    problems.push(`provider_address must be a bech32 account address with prefix "${prefix}"`);
  }
  checkCallback(file, problems);
  checkApi(file, problems);
  checkStores(file, problems);
  checkNumbers(file, problems);
  checkSubSigners(file, problems);
  checkTenants(file.maintenance_legacy_idempotency_tenants, prefix, problems);
  checkOperatorListener(file, problems);
}

function checkCallback(file: FileConfig, problems: string[]): void {
  const base = file.callback_base_url;
  if (base === undefined) {
    // Only a port-0 listener outside production_mode derives its own base: a fixed port may
    // sit behind a proxy providerd cannot see, and production needs a public https URL.
    if (file.production_mode) problems.push("callback_base_url is required in production_mode");
    else if (Number(splitHostPort(file.api_listen_addr)?.port) !== 0) {
      problems.push(
        "callback_base_url is required unless api_listen_addr has port 0 (providerd then derives it from the bound address)",
      );
    }
    if (file.callback_canonical_path_prefix !== "") {
      problems.push("callback_canonical_path_prefix must be empty when callback_base_url is derived");
    }
    return;
  }
  if (file.production_mode && base.scheme !== "https") {
    problems.push("callback_base_url must use https:// in production_mode");
  }
  if (file.production_mode && isLocalOnlyHost(base.host)) {
    problems.push(
      "callback_base_url must not point at a loopback, link-local or unspecified address in production_mode",
    );
  }
  const prefix = file.callback_canonical_path_prefix;
  if (prefix !== base.path) {
    problems.push(
      `callback_canonical_path_prefix must equal the path of callback_base_url (${JSON.stringify(base.path)}), got ${JSON.stringify(prefix)}`,
    );
  }
}

function checkStores(file: FileConfig, problems: string[]): void {
  if (file.database_url !== undefined) {
    checkDatabase(file, problems);
    return;
  }
  for (const key of ["database_password_file", "state_dir", "ha_advertise_url"] as const) {
    if (file[key] !== undefined)
      problems.push(`${key} is for database_url (providerd on PostgreSQL); remove it`);
  }
  const placement = file.placement_store_db_path ?? "";
  if (placement === "") {
    problems.push("placement_store_db_path is required (create the store with `fred placement init`)");
  }
  const payload = file.payload_store_db_path ?? "";
  const tracker = file.token_tracker_db_path ?? "";
  if (file.production_mode && tracker === "") problems.push("production_mode requires token_tracker_db_path");
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
  const snapDir = file.placement_snapshot_dir;
  if (snapDir === "") return;
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
  if (file.placement_snapshot_interval < 5 * 60_000) {
    problems.push("placement_snapshot_interval must be at least 5m");
  }
  const retain = file.placement_snapshot_retain;
  if (retain < 1 || retain > 1000) problems.push("placement_snapshot_retain must be between 1 and 1000");
}

/**
 * database_url: every store is in PostgreSQL, so the SQLite files' keys would be ignored and
 * are refused; the instance's local files (control socket, operator token) go in state_dir.
 */
function checkDatabase(file: FileConfig, problems: string[]): void {
  const url = file.database_url ?? "";
  if (!/^postgres(ql)?:\/\/[^\s]+$/.test(url)) {
    problems.push("database_url must be a postgres:// or postgresql:// URL");
  } else if (/^postgres(ql)?:\/\/[^/@]*:[^/@]*@/.test(url)) {
    problems.push(
      "database_url must not hold the password: put it in database_password_file (mode 0600) or FRED_DATABASE_PASSWORD",
    );
  }
  const kept: [string, unknown][] = [
    ["placement_store_db_path", file.placement_store_db_path],
    ["payload_store_db_path", file.payload_store_db_path],
    ["token_tracker_db_path", file.token_tracker_db_path],
  ];
  for (const [key, value] of kept) {
    if (value !== undefined)
      problems.push(`${key} must not be set with database_url: that store is in PostgreSQL`);
  }
  if (file.placement_snapshot_dir !== "") {
    problems.push(
      "placement_snapshot_dir must not be set with database_url: snapshots copy the SQLite files; back PostgreSQL up with its own tools",
    );
  }
  const state = file.state_dir;
  if (state === undefined) {
    problems.push(
      "state_dir is required with database_url (the instance's control socket and operator token live there)",
    );
  } else if (!isAbsolute(state)) {
    problems.push("state_dir must be an absolute path");
  }
  const advertise = file.ha_advertise_url;
  if (advertise !== undefined && !/^https?:\/\/[^/?#@\s]+$/.test(advertise)) {
    problems.push(
      "ha_advertise_url must be an http:// or https:// origin such as https://10.0.0.5:8080 (no path)",
    );
  }
}

function checkApi(file: FileConfig, problems: string[]): void {
  if ((file.tls_cert_file === "") !== (file.tls_key_file === "")) {
    problems.push("tls_cert_file and tls_key_file must be set together");
  }
}

function checkNumbers(file: FileConfig, problems: string[]): void {
  if (file.websocket_reconnect_initial > file.websocket_reconnect_max) {
    problems.push("websocket_reconnect_initial must not exceed websocket_reconnect_max");
  }
  if (file.max_gas_limit > 0 && file.max_gas_limit < file.gas_limit) {
    problems.push("max_gas_limit must be 0 (uncapped) or at least gas_limit");
  }
  if (file.credit_check_interval > file.withdraw_interval) {
    problems.push("credit_check_interval must not exceed withdraw_interval (0s couples them)");
  }
}

/** deriveSubSigners' limit (chain/cosmos/sub-signers.ts), kept here to load no chain code. */
const MAX_SUB_SIGNERS = 100;

function checkSubSigners(file: FileConfig, problems: string[]): void {
  if (file.sub_signer_count === 0) return;
  if (file.sub_signer_count > MAX_SUB_SIGNERS)
    problems.push(`sub_signer_count must be at most ${MAX_SUB_SIGNERS}`);
  for (const key of ["sub_signer_min_balance", "sub_signer_top_up_amount"] as const) {
    const coin = parseCoin(file[key]);
    if (coin !== undefined && coin.denom !== file.fee_denom)
      problems.push(
        `${key} must be in fee_denom (${file.fee_denom}): the sub-signers pay their fees from it`,
      );
  }
  if (parseCoin(file.sub_signer_top_up_amount)?.amount === 0n)
    problems.push("sub_signer_top_up_amount must be greater than zero");
}

/** The one entry that admits every tenant on the legacy terms (alone in the list). */
export const EVERY_LEGACY_TENANT = "*";

function checkTenants(tenants: readonly string[], prefix: string, problems: string[]): void {
  if (tenants.includes(EVERY_LEGACY_TENANT)) {
    if (tenants.length > 1) {
      problems.push(
        `maintenance_legacy_idempotency_tenants: "${EVERY_LEGACY_TENANT}" admits every tenant and must be the list's only entry, not mixed with addresses`,
      );
    }
    return;
  }
  const seen = new Set<string>();
  for (const [j, t] of tenants.entries()) {
    if (!isAccountAddress(t, prefix) || t !== t.toLowerCase()) {
      problems.push(
        `maintenance_legacy_idempotency_tenants[${j}] must be a bech32 account address with prefix "${prefix}"`,
      );
    } else if (seen.has(t)) problems.push(`maintenance_legacy_idempotency_tenants lists ${t} more than once`);
    seen.add(t);
  }
}

/** Hosts that accept connections on every interface: they overlap any other host. */
const WILDCARD_HOSTS = new Set(["", "0.0.0.0", "[::]", "::"]);

function sameListenHost(a: string, b: string): boolean {
  const local = (h: string) => (h === "localhost" ? "127.0.0.1" : h.toLowerCase());
  return WILDCARD_HOSTS.has(a) || WILDCARD_HOSTS.has(b) || local(a) === local(b);
}

/** The operator listener (the dashboard): its own port, and each of its keys used or refused. */
function checkOperatorListener(file: FileConfig, problems: string[]): void {
  const addr = file.operator_listen_addr;
  const cert = file.operator_tls_cert_file;
  const key = file.operator_tls_key_file;
  const ca = file.operator_client_ca_file;
  if (addr === "") {
    const set = (
      [
        ["operator_token_file", file.operator_token_file],
        ["operator_tls_cert_file", cert],
        ["operator_tls_key_file", key],
        ["operator_client_ca_file", ca],
      ] as const
    ).filter(([, v]) => v !== "");
    for (const [name] of set)
      problems.push(`${name} has no effect: operator_listen_addr is "" (the operator listener is off)`);
    return;
  }
  const operator = splitHostPort(addr);
  const api = splitHostPort(file.api_listen_addr);
  if (
    operator !== undefined &&
    api !== undefined &&
    Number(operator.port) !== 0 &&
    Number(operator.port) === Number(api.port) &&
    sameListenHost(operator.host, api.host)
  ) {
    problems.push(
      `operator_listen_addr (${addr}) must not collide with api_listen_addr (${file.api_listen_addr}): the dashboard never shares the tenant port`,
    );
  }
  if ((cert === "") !== (key === "")) {
    problems.push("operator_tls_cert_file and operator_tls_key_file must be set together");
  }
  if (ca !== "" && cert === "") {
    problems.push(
      "operator_client_ca_file requires operator_tls_cert_file and operator_tls_key_file (client certificates are checked over HTTPS)",
    );
  }
  // The bearer token must not cross a network in clear text.
  if (file.production_mode && cert === "" && operator !== undefined && !isLoopbackHost(operator.host)) {
    problems.push(
      "operator_listen_addr off loopback requires operator_tls_cert_file and operator_tls_key_file in production_mode",
    );
  }
}
