import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildCallbackUrl } from "../../../src/core/backend-contract/index.ts";
import {
  ConfigError,
  checkProviderConfig,
  parseProviderConfig,
  providerConfigSchema,
  REFUSED_KEYS,
  redactConfig,
  withBoundCallbackBase,
} from "../../../src/provider/config/index.ts";
import { baseConfig, PROVIDER_UUID, problemsOf, SECRET_1, SECRET_2, SKU_A, yamlOf } from "./fixtures.ts";

describe("providerd config: loading", () => {
  it("builds a frozen camelCase object with reference defaults and durations in ms", () => {
    const config = parseProviderConfig(yamlOf(baseConfig()));
    assert.equal(config.providerUuid, PROVIDER_UUID);
    assert.equal(config.logLevel, "info");
    assert.equal(config.chainId, "manifest-1");
    assert.equal(config.apiListenAddr, ":8080");
    assert.equal(config.withdrawIntervalMs, 3_600_000);
    assert.equal(config.reconciliationIntervalMs, 300_000);
    assert.equal(config.txPollIntervalMs, 500);
    assert.equal(config.creditCheckIntervalMs, 0);
    assert.equal(config.provisionCallbackTimeoutMs, 900_000);
    assert.equal(config.shutdownTimeoutMs, 30_000);
    assert.equal(config.gasAdjustment, 1.2);
    assert.equal(config.maxRequestBodySize, 1_048_576);
    assert.equal(config.subSignerMinBalance, "10000000umfx");
    assert.deepEqual(config.corsOrigins, ["*"]);
    assert.deepEqual(config.trustedProxies, []);
    assert.equal(config.payloadStoreDbPath, undefined);
    assert.equal(config.rpcUrl, "http://localhost:26657");
    assert.equal(config.backends[0]!.timeoutMs, 30_000);
    assert.equal(config.backends[0]!.isDefault, true);
    assert.equal(config.backends[1]!.draining, false);
    assert.equal(config.callbackBaseUrl, "http://127.0.0.1:8080");
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.backends[0]));
    assert.throws(() => {
      (config.backends as unknown as unknown[]).push({});
    }, TypeError);
  });

  it("derives rpc_url from websocket_url and lets rpc_url override it", () => {
    const wss = parseProviderConfig(
      yamlOf({ ...baseConfig(), websocket_url: "wss://rpc.example.com:443/websocket" }),
    );
    assert.equal(wss.rpcUrl, "https://rpc.example.com:443");
    const explicit = parseProviderConfig(yamlOf({ ...baseConfig(), rpc_url: "http://10.0.0.5:26657/" }));
    assert.equal(explicit.rpcUrl, "http://10.0.0.5:26657");
  });

  it("normalises callback_base_url: trailing slashes stripped, escapes canonical, query kept", () => {
    const c = parseProviderConfig(
      yamlOf({
        ...baseConfig(),
        callback_base_url: "https://fred.example.com/api/%66red/?x=1%2f",
        callback_canonical_path_prefix: "/api/fred",
      }),
    );
    assert.equal(c.callbackBaseUrl, "https://fred.example.com/api/fred?x=1%2f");
    assert.equal(c.callbackBase.path, "/api/fred");
  });

  it("builds callback URLs under the base path, keeping the base query before the id", () => {
    const op = "11111111-1111-4111-8111-111111111111";
    const root = parseProviderConfig(yamlOf(baseConfig()));
    assert.equal(
      buildCallbackUrl(root.callbackBase, "operation_id", op),
      `http://127.0.0.1:8080/callbacks/provision?operation_id=${op}`,
    );
    const nested = parseProviderConfig(
      yamlOf({
        ...baseConfig(),
        callback_base_url: "https://fred.example.com/api/fred/?tenant=a%20b",
        callback_canonical_path_prefix: "/api/fred",
      }),
    );
    assert.equal(
      buildCallbackUrl(nested.callbackBase, "lifecycle_id", op),
      `https://fred.example.com/api/fred/callbacks/provision?tenant=a%20b&lifecycle_id=${op}`,
    );
  });

  it("leaves callback_base_url to the bound API address on port 0 outside production_mode", () => {
    const op = "11111111-1111-4111-8111-111111111111";
    const c = baseConfig();
    delete c.callback_base_url;
    c.api_listen_addr = "127.0.0.1:0";
    const config = parseProviderConfig(yamlOf(c));
    assert.equal(config.callbackBaseFromListener, true);
    const bound = withBoundCallbackBase(config, "http://127.0.0.1:40123");
    assert.equal(bound.callbackBaseUrl, "http://127.0.0.1:40123");
    assert.equal(
      buildCallbackUrl(bound.callbackBase, "operation_id", op),
      `http://127.0.0.1:40123/callbacks/provision?operation_id=${op}`,
    );
    assert.ok(Object.isFrozen(bound) && Object.isFrozen(bound.callbackBase));
    const fixed = parseProviderConfig(yamlOf(baseConfig()));
    assert.equal(fixed.callbackBaseFromListener, false);
    assert.equal(withBoundCallbackBase(fixed, "http://127.0.0.1:40123"), fixed, "a configured base is kept");
    const production = checkProviderConfig(yamlOf({ ...c, production_mode: true }));
    assert.ok(!production.ok);
    assert.ok(production.problems.includes("callback_base_url is required in production_mode"));
  });

  it("redacts every secret for logging", () => {
    const config = parseProviderConfig(yamlOf(baseConfig()));
    const text = JSON.stringify(redactConfig(config));
    assert.ok(!text.includes(SECRET_1) && !text.includes(SECRET_2));
    assert.match(text, /"hmacSecret":"\[redacted\]"/);
    assert.match(text, /"hmacSecretPrevious":""/);
  });

  it("requires exactly one YAML document", () => {
    const two = `${yamlOf(baseConfig())}---\nlog_level: debug\n`;
    assert.deepEqual(problemsOfText(two), ["config file must contain exactly one YAML document, found 2"]);
    assert.deepEqual(problemsOfText(""), ["config file is empty"]);
    assert.deepEqual(problemsOfText("- a\n- b\n"), ["config must be a YAML mapping of keys to values"]);
  });

  it("refuses YAML duplicate keys", () => {
    const problems = problemsOfText(`${yamlOf(baseConfig())}log_level: debug\nlog_level: info\n`);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^YAML: Map keys must be unique/);
  });

  it("rejects unknown keys at the top level and inside backends", () => {
    assert.deepEqual(
      problemsOf((c) => {
        c.sku_prefix = "x";
        (c.backends as Record<string, unknown>[])[1]!.weight = 3;
      }),
      ['unknown key "sku_prefix"', 'unknown key "backends[1].weight"'],
    );
  });

  it("rejects case-insensitive key collisions, nested too", () => {
    const text = `${yamlOf(baseConfig())}Provider_UUID: ${PROVIDER_UUID}\n`;
    assert.deepEqual(problemsOfText(text), [
      'keys "provider_uuid" and "Provider_UUID" collide (keys are compared case-insensitively)',
    ]);
    const nested = yamlOf(baseConfig()).replace(
      "    default: true\n",
      "    default: true\n    DEFAULT: false\n",
    );
    assert.deepEqual(problemsOfText(nested), [
      'keys "backends[0].default" and "backends[0].DEFAULT" collide (keys are compared case-insensitively)',
    ]);
  });

  it("refuses wrongly typed values, one message each", () => {
    assert.deepEqual(
      problemsOf((c) => {
        c.tx_timeout = 30;
        c.production_mode = "yes";
        c.query_page_limit = 1.5;
        c.reconciliation_interval = "5 minutes";
        c.billing_only_skus = "*";
      }),
      [
        "billing_only_skus must be a list of strings",
        "production_mode must be true or false",
        'reconciliation_interval is not a valid duration: "5 minutes" (use forms like "500ms", "30s", "5m", "1h")',
        'tx_timeout must be a duration string such as "30s"',
        "query_page_limit must be an integer",
      ],
    );
  });

  it("applies PROVIDER_<KEY> overrides to keys with a default or present in the file", () => {
    const r = checkProviderConfig(yamlOf(baseConfig()), {
      PROVIDER_LOG_LEVEL: "debug",
      PROVIDER_RECONCILIATION_INTERVAL: "2h",
      PROVIDER_PRODUCTION_MODE: "false",
      PROVIDER_BILLING_ONLY_SKUS:
        "0190f3a2-7c1e-7000-8000-0000000000b1, 0190f3a2-7c1e-7000-8000-0000000000b2",
      PROVIDER_KEY_NAME: "ops",
      PROVIDER_GAS_ADJUSTMENT: "1.5",
    });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.config.logLevel, "debug");
    assert.equal(r.config.reconciliationIntervalMs, 7_200_000);
    assert.equal(r.config.keyName, "ops");
    assert.equal(r.config.gasAdjustment, 1.5);
    assert.deepEqual(r.config.billingOnlySkus, [
      "0190f3a2-7c1e-7000-8000-0000000000b1",
      "0190f3a2-7c1e-7000-8000-0000000000b2",
    ]);
  });

  it("refuses env overrides for absent no-default keys, backends, and bad env values", () => {
    assert.deepEqual(
      problemsOf(() => {}, {
        PROVIDER_PAYLOAD_STORE_DB_PATH: "/tmp/p.db",
        PROVIDER_BACKENDS: "x",
        PROVIDER_PRODUCTION_MODE: "1",
        PROVIDER_QUERY_PAGE_LIMIT: "ten",
        PROVIDER_TX_TIMEOUT: "soon",
      }),
      [
        "PROVIDER_BACKENDS cannot set backends; list them in the config file",
        "PROVIDER_PRODUCTION_MODE must be true or false",
        "PROVIDER_PAYLOAD_STORE_DB_PATH is set but payload_store_db_path is not in the config file; keys without a default must appear in the file",
        'PROVIDER_TX_TIMEOUT is not a valid duration: "soon" (use forms like "500ms", "30s", "5m", "1h")',
        "PROVIDER_QUERY_PAGE_LIMIT must be an integer",
      ],
    );
  });

  it("throws a ConfigError listing every problem", () => {
    const c = baseConfig();
    delete c.provider_uuid;
    c.log_level = "loud";
    try {
      parseProviderConfig(yamlOf(c));
      assert.fail("expected ConfigError");
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.code, "ERR_CONFIG_INVALID");
      assert.deepEqual(err.problems, [
        "provider_uuid is required",
        "log_level must be one of debug, info, warn, error",
      ]);
    }
  });

  it("has the rules of the later features' keys ready: valid values pass once the refusal is lifted", () => {
    const r = checkProviderConfig(
      yamlOf({
        ...baseConfig(),
        payload_store_db_path: "/tmp/fred/payloads.db",
        placement_snapshot_dir: "/var/backups/fred",
        placement_snapshot_interval: "10m",
        placement_snapshot_retain: 48,
        maintenance_legacy_idempotency_tenants: ["manifest17v5vws89w262da7p4wrku7hll46mml9n7wg90m"],
        trusted_proxies: ["10.0.0.0/8", "fd00::/8"],
        sub_signer_count: 4,
        credit_check_interval: "10m",
        grpc_endpoint: "localhost:9090",
        grpc_tls_enabled: true,
        billing_only_skus: ["0190f3a2-7c1e-7000-8000-0000000000b1"],
        backends: [{ name: "solo", url: "https://b.example.com", hmac_secret: SECRET_1, skus: [SKU_A] }],
      }),
      {},
      { refusedKeys: {} },
    );
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.config.placementSnapshotIntervalMs, 600_000);
  });
});

function problemsOfText(text: string): string[] {
  const r = checkProviderConfig(text);
  return r.ok ? [] : r.problems;
}

describe("providerd config: a key either takes effect or is refused", () => {
  const refused = Object.entries(REFUSED_KEYS).filter(([, r]) => !r.atDefault);
  const grpc = Object.entries(REFUSED_KEYS).filter(([, r]) => r.atDefault);

  it("every refused key is a key of the schema (its type and rules stay ready)", () => {
    const keys = Object.keys(providerConfigSchema.in.shape);
    for (const key of Object.keys(REFUSED_KEYS)) assert.ok(keys.includes(key), key);
    assert.deepEqual(
      grpc.map(([k]) => k),
      ["grpc_endpoint", "grpc_tls_enabled", "grpc_tls_ca_file", "grpc_tls_skip_verify"],
    );
  });

  it("refuses a not-yet-effective key set in the file, whatever its value", () => {
    for (const [key, { reason }] of refused) {
      for (const value of ["x", null, 0, []]) {
        assert.deepEqual(
          problemsOf((c) => (c[key] = value)),
          [`${key}: ${reason}`],
          `${key}: ${JSON.stringify(value)}`,
        );
      }
    }
  });

  it("refuses a not-yet-effective key set by PROVIDER_<KEY>, whatever its value", () => {
    for (const [key, { reason }] of refused) {
      const name = `PROVIDER_${key.toUpperCase()}`;
      assert.deepEqual(
        problemsOf(() => {}, { [name]: "" }),
        [`${key} (from ${name}): ${reason}`],
      );
    }
  });

  it("accepts gRPC keys at their defaults only, from the file or the environment", () => {
    const defaults = { grpc_endpoint: "localhost:9090", grpc_tls_enabled: false, grpc_tls_ca_file: "" };
    assert.deepEqual(
      problemsOf((c) => Object.assign(c, defaults), { PROVIDER_GRPC_TLS_SKIP_VERIFY: "false" }),
      [],
    );
    const why = "this implementation reads the chain through CometBFT RPC: set rpc_url";
    assert.deepEqual(
      problemsOf((c) => (c.grpc_endpoint = "node.example.com:9090"), {
        PROVIDER_GRPC_TLS_CA_FILE: "/ca.pem",
      }),
      [
        `grpc_endpoint: only the default "localhost:9090" is accepted; ${why}`,
        `grpc_tls_ca_file (from PROVIDER_GRPC_TLS_CA_FILE): only the default "" is accepted; ${why}`,
      ],
    );
  });

  it("reports refusals beside the file's other problems", () => {
    assert.deepEqual(
      problemsOf((c) => {
        c.grpc_endpoint = "node.example.com:9090";
        c.log_level = "loud";
      }),
      [
        `grpc_endpoint: only the default "localhost:9090" is accepted; ${REFUSED_KEYS.grpc_endpoint!.reason}`,
        "log_level must be one of debug, info, warn, error",
      ],
    );
  });
});
