import { MIN_SECRET_BYTES } from "../../auth/hmac.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { Decoded } from "./decode.ts";
import type { BackendConfig } from "./types.ts";
import { isLocalOnlyHost, parseBackendOrigin } from "./urls.ts";

/**
 * Rules over `backends[]` and the keys that depend on them (secrets, SKU lists,
 * billing-only SKUs). Each rule adds one message; the wording is part of our contract
 * (tests assert it verbatim), so change it only together with docs/providerd-config.md.
 */
export interface BackendRulesInput {
  backends: Decoded[];
  broken: ReadonlySet<string>;
  productionMode: boolean;
  callbackSecret: string;
  billingOnlySkus: readonly string[] | undefined;
  /** Whether the file has a `backends` key at all (its absence is reported once, elsewhere). */
  present: boolean;
}

const PRINTABLE = /^[^\p{Cc}\p{Cs}\p{Co}\p{Cn}]+$/u;

function str(d: Decoded, key: string): string {
  const v = d.get(key);
  return typeof v === "string" ? v : "";
}

export function checkBackends(input: BackendRulesInput, problems: string[]): BackendConfig[] {
  const { backends, broken, productionMode } = input;
  if (input.present && !broken.has("backends") && backends.length === 0) {
    problems.push("backends must list at least one backend");
  }
  const out: BackendConfig[] = [];
  const names = new Map<string, number>();
  backends.forEach((b, i) => {
    const at = `backends[${i}]`;
    const name = str(b, "name");
    if (!b.has("name") && !broken.has(`${at}.name`)) problems.push(`${at}.name is required`);
    else if (b.has("name") && (name === "" || name.trim() !== name || !PRINTABLE.test(name))) {
      problems.push(`${at}.name must be non-blank printable text without leading or trailing whitespace`);
    } else if (b.has("name")) {
      const earlier = names.get(name);
      if (earlier !== undefined) problems.push(`${at}.name "${name}" duplicates backends[${earlier}].name`);
      else names.set(name, i);
    }
    let origin = "";
    let scheme: "http" | "https" = "http";
    let host = "";
    if (!b.has("url") && !broken.has(`${at}.url`)) problems.push(`${at}.url is required`);
    else if (b.has("url")) {
      const parsed = parseBackendOrigin(str(b, "url"), `${at}.url`);
      if (!parsed.ok) problems.push(parsed.problem);
      else {
        ({ origin, scheme, host } = parsed.value);
        if (productionMode && scheme !== "https")
          problems.push(`${at}.url must use https:// in production_mode`);
        if (productionMode && isLocalOnlyHost(host)) {
          problems.push(
            `${at}.url must not point at a loopback, link-local or unspecified address in production_mode`,
          );
        }
      }
    }
    const tls = {
      tlsCaFile: str(b, "tls_ca_file"),
      tlsSkipVerify: b.get("tls_skip_verify") === true,
      tlsClientCertFile: str(b, "tls_client_cert_file"),
      tlsClientKeyFile: str(b, "tls_client_key_file"),
    };
    const usesTls =
      tls.tlsCaFile !== "" ||
      tls.tlsSkipVerify ||
      tls.tlsClientCertFile !== "" ||
      tls.tlsClientKeyFile !== "";
    if (usesTls && origin !== "" && scheme !== "https") {
      problems.push(
        `${at} TLS settings (tls_ca_file, tls_skip_verify, tls_client_*) require an https:// url`,
      );
    }
    if ((tls.tlsClientCertFile === "") !== (tls.tlsClientKeyFile === "")) {
      problems.push(`${at}.tls_client_cert_file and ${at}.tls_client_key_file must be set together`);
    }
    if (productionMode && tls.tlsSkipVerify)
      problems.push(`${at}.tls_skip_verify is not allowed in production_mode`);
    out.push({
      name,
      url: origin,
      scheme,
      host,
      hmacSecret: str(b, "hmac_secret"),
      hmacSecretPrevious: str(b, "hmac_secret_previous"),
      skus: (b.get("skus") as string[] | undefined) ?? [],
      isDefault: b.get("default") === true,
      timeoutMs: (b.get("timeout") as number | undefined) ?? 30_000,
      ...tls,
      fenced: b.get("fenced") === true,
      draining: b.get("draining") === true,
    });
  });
  checkTimeouts(out, problems);
  checkSecrets(out, input, problems);
  checkRouting(out, input, problems);
  return out;
}

function checkTimeouts(backends: BackendConfig[], problems: string[]): void {
  backends.forEach((b, i) => {
    if (b.timeoutMs <= 0) problems.push(`backends[${i}].timeout must be greater than zero`);
  });
}

function checkSecrets(backends: BackendConfig[], input: BackendRulesInput, problems: string[]): void {
  const withSecret = backends.filter((b) => b.hmacSecret !== "").length;
  if (input.callbackSecret !== "") {
    if (Buffer.byteLength(input.callbackSecret) < MIN_SECRET_BYTES) {
      problems.push(`callback_secret must be at least ${MIN_SECRET_BYTES} bytes`);
    }
    if (withSecret > 0) problems.push("callback_secret cannot be combined with backends[].hmac_secret");
    if (input.productionMode) {
      problems.push(
        "callback_secret (legacy, fleet-wide) is not allowed in production_mode; set backends[].hmac_secret",
      );
    }
  }
  if (input.productionMode && withSecret < backends.length) {
    problems.push("production_mode requires hmac_secret on every backend");
  } else if (withSecret > 0 && withSecret < backends.length) {
    problems.push("hmac_secret must be set on every backend or on none");
  } else if (withSecret === 0 && input.callbackSecret === "" && backends.length > 0) {
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
      if (Buffer.byteLength(secret) < MIN_SECRET_BYTES)
        problems.push(`${at} must be at least ${MIN_SECRET_BYTES} bytes`);
      const earlier = keys.get(secret);
      if (earlier !== undefined)
        problems.push(`${at} must differ from ${earlier}; every HMAC key must be unique`);
      else keys.set(secret, at);
    }
    if (b.hmacSecretPrevious !== "" && b.hmacSecret === "") {
      problems.push(`backends[${i}].hmac_secret_previous requires hmac_secret on the same backend`);
    }
  });
  if (input.callbackSecret !== "" && keys.has(input.callbackSecret)) {
    problems.push("callback_secret must differ from every backends[].hmac_secret");
  }
  const fenced = backends.filter((b) => b.fenced).length;
  if (fenced > 0 && withSecret < backends.length) {
    problems.push("fenced backends require hmac_secret on every backend");
  }
  if (fenced > 0 && fenced === backends.length) problems.push("at least one backend must not be fenced");
}

function checkRouting(backends: BackendConfig[], input: BackendRulesInput, problems: string[]): void {
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
  const billingOnly = input.billingOnlySkus ?? [];
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
