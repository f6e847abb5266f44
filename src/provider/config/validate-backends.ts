import { isCanonicalUuid } from "../../core/uuid.ts";
import type { BackendConfig, FileConfig } from "./schema.ts";
import { isLocalOnlyHost } from "./urls.ts";

/**
 * Rules across `backends[]` and the keys that depend on them (production mode, secrets,
 * SKU lists, billing-only SKUs). They run on well-formed values only (each field's own
 * rules passed). Each rule adds one message; the wording is part of our contract (tests
 * assert it verbatim), so change it only together with docs/providerd-config.md.
 */
export function checkBackends(file: FileConfig, problems: string[]): void {
  const { backends, production_mode: productionMode } = file;
  const names = new Map<string, number>();
  backends.forEach((b, i) => {
    const at = `backends[${i}]`;
    const earlier = names.get(b.name);
    if (earlier !== undefined) problems.push(`${at}.name "${b.name}" duplicates backends[${earlier}].name`);
    else names.set(b.name, i);
    // A Unix socket is local by construction: no network peer can reach or impersonate it
    // unless the socket's own file permissions let it, so neither rule below concerns it.
    if (productionMode && b.scheme === "http")
      problems.push(`${at}.url must use https:// in production_mode`);
    if (productionMode && b.scheme !== "unix" && isLocalOnlyHost(b.host)) {
      problems.push(
        `${at}.url must not point at a loopback, link-local or unspecified address in production_mode`,
      );
    }
    const usesTls =
      b.tlsCaFile !== "" || b.tlsSkipVerify || b.tlsClientCertFile !== "" || b.tlsClientKeyFile !== "";
    if (usesTls && b.scheme === "unix") {
      const keys = (
        [
          ["tls_ca_file", b.tlsCaFile !== ""],
          ["tls_skip_verify", b.tlsSkipVerify],
          ["tls_client_cert_file", b.tlsClientCertFile !== ""],
          ["tls_client_key_file", b.tlsClientKeyFile !== ""],
        ] as const
      ).flatMap(([key, set]) => (set ? [`${at}.${key}`] : []));
      problems.push(
        `${keys.join(", ")} cannot be used with a unix: url (TLS over a local socket protects nothing; the socket's file mode decides who connects)`,
      );
    } else if (usesTls && b.scheme !== "https") {
      problems.push(
        `${at} TLS settings (tls_ca_file, tls_skip_verify, tls_client_*) require an https:// url`,
      );
    }
    if ((b.tlsClientCertFile === "") !== (b.tlsClientKeyFile === "")) {
      problems.push(`${at}.tls_client_cert_file and ${at}.tls_client_key_file must be set together`);
    }
    if (productionMode && b.tlsSkipVerify)
      problems.push(`${at}.tls_skip_verify is not allowed in production_mode`);
  });
  checkSecrets(backends, file, problems);
  checkRouting(backends, file.billing_only_skus, problems);
}

function checkSecrets(backends: readonly BackendConfig[], file: FileConfig, problems: string[]): void {
  const callbackSecret = file.callback_secret;
  const withSecret = backends.filter((b) => b.hmacSecret !== "").length;
  if (callbackSecret !== "") {
    if (withSecret > 0) problems.push("callback_secret cannot be combined with backends[].hmac_secret");
    if (file.production_mode) {
      problems.push(
        "callback_secret (legacy, fleet-wide) is not allowed in production_mode; set backends[].hmac_secret",
      );
    }
  }
  if (file.production_mode && withSecret < backends.length) {
    problems.push("production_mode requires hmac_secret on every backend");
  } else if (withSecret > 0 && withSecret < backends.length) {
    problems.push("hmac_secret must be set on every backend or on none");
  } else if (withSecret === 0 && callbackSecret === "" && backends.length > 0) {
    problems.push("set hmac_secret on every backend (or the legacy callback_secret outside production_mode)");
  }
  const keys = new Map<string, string>();
  backends.forEach((b, i) => {
    for (const [field, secret] of [
      ["hmac_secret", b.hmacSecret],
      ["hmac_secret_previous", b.hmacSecretPrevious],
    ] as const) {
      if (secret === "") continue;
      const at = `backends[${i}].${field}`;
      const earlier = keys.get(secret);
      if (earlier !== undefined)
        problems.push(`${at} must differ from ${earlier}; every HMAC key must be unique`);
      else keys.set(secret, at);
    }
    if (b.hmacSecretPrevious !== "" && b.hmacSecret === "") {
      problems.push(`backends[${i}].hmac_secret_previous requires hmac_secret on the same backend`);
    }
  });
  if (callbackSecret !== "" && keys.has(callbackSecret)) {
    problems.push("callback_secret must differ from every backends[].hmac_secret");
  }
  const fenced = backends.filter((b) => b.fenced).length;
  if (fenced > 0 && withSecret < backends.length) {
    problems.push("fenced backends require hmac_secret on every backend");
  }
  if (fenced > 0 && fenced === backends.length) problems.push("at least one backend must not be fenced");
}

function checkRouting(
  backends: readonly BackendConfig[],
  billingOnly: readonly string[],
  problems: string[],
): void {
  const defaults = backends.flatMap((b, i) => (b.isDefault ? [`backends[${i}]`] : []));
  if (defaults.length > 1) {
    problems.push(`at most one backend may set default: true (${defaults.join(", ")} do)`);
  }
  const served = new Map<string, string>();
  backends.forEach((b, i) => {
    const seen = new Set<string>();
    b.skus.forEach((sku, j) => {
      if (!isCanonicalUuid(sku))
        problems.push(`backends[${i}].skus[${j}] must be a canonical lowercase UUID`);
      else if (seen.has(sku)) problems.push(`backends[${i}].skus lists ${sku} more than once`);
      seen.add(sku);
      if (!served.has(sku)) served.set(sku, b.name);
    });
  });
  const seen = new Set<string>();
  billingOnly.forEach((sku, j) => {
    if (!isCanonicalUuid(sku)) problems.push(`billing_only_skus[${j}] must be a canonical lowercase UUID`);
    else if (seen.has(sku)) problems.push(`billing_only_skus lists ${sku} more than once`);
    else if (served.has(sku)) {
      problems.push(
        `billing_only_skus entry ${sku} is served by backend "${served.get(sku)}"; it must be served by none`,
      );
    }
    seen.add(sku);
  });
}
