import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkProviderConfig } from "../../../src/provider/config/index.ts";
import { baseConfig, problemsOf, yamlOf } from "./fixtures.ts";

/**
 * The operator listener's keys (the dashboard): defaults, and each refusal by name —
 * a listen address that is not one, one that collides with api_listen_addr, a TLS pair
 * set by half, a client CA without a server certificate, and any operator key set while
 * the listener is off.
 */
type Mutation = (c: Record<string, unknown>) => void;

const REFUSALS: [string, Mutation, string[]][] = [
  [
    "not an address",
    (c) => (c.operator_listen_addr = "localhost"),
    ['operator_listen_addr must be "host:port", ":port" or "" (off)'],
  ],
  [
    "port out of range",
    (c) => (c.operator_listen_addr = "127.0.0.1:70000"),
    ["operator_listen_addr port must be between 0 and 65535"],
  ],
  [
    "the tenant port (same host)",
    (c) => {
      c.api_listen_addr = "127.0.0.1:8080";
      c.operator_listen_addr = "127.0.0.1:8080";
    },
    [
      "operator_listen_addr (127.0.0.1:8080) must not collide with api_listen_addr (127.0.0.1:8080): the dashboard never shares the tenant port",
    ],
  ],
  [
    "the tenant port on every interface",
    (c) => {
      c.api_listen_addr = ":9000";
      c.operator_listen_addr = "127.0.0.1:9000";
    },
    [
      "operator_listen_addr (127.0.0.1:9000) must not collide with api_listen_addr (:9000): the dashboard never shares the tenant port",
    ],
  ],
  [
    "localhost is loopback",
    (c) => {
      c.api_listen_addr = "127.0.0.1:9000";
      c.operator_listen_addr = "localhost:9000";
    },
    [
      "operator_listen_addr (localhost:9000) must not collide with api_listen_addr (127.0.0.1:9000): the dashboard never shares the tenant port",
    ],
  ],
  [
    "half a TLS pair",
    (c) => (c.operator_tls_cert_file = "/etc/op.pem"),
    ["operator_tls_cert_file and operator_tls_key_file must be set together"],
  ],
  [
    "the other half",
    (c) => (c.operator_tls_key_file = "/etc/op.key"),
    ["operator_tls_cert_file and operator_tls_key_file must be set together"],
  ],
  [
    "a client CA without HTTPS",
    (c) => (c.operator_client_ca_file = "/etc/ca.pem"),
    [
      "operator_client_ca_file requires operator_tls_cert_file and operator_tls_key_file (client certificates are checked over HTTPS)",
    ],
  ],
  [
    "operator keys with the listener off",
    (c) => {
      c.operator_listen_addr = "";
      c.operator_token_file = "/etc/fred/token";
      c.operator_tls_cert_file = "/etc/op.pem";
      c.operator_tls_key_file = "/etc/op.key";
      c.operator_client_ca_file = "/etc/ca.pem";
    },
    [
      'operator_token_file has no effect: operator_listen_addr is "" (the operator listener is off)',
      'operator_tls_cert_file has no effect: operator_listen_addr is "" (the operator listener is off)',
      'operator_tls_key_file has no effect: operator_listen_addr is "" (the operator listener is off)',
      'operator_client_ca_file has no effect: operator_listen_addr is "" (the operator listener is off)',
    ],
  ],
  [
    "a listener off loopback without TLS in production_mode",
    (c) => {
      c.production_mode = true;
      c.operator_listen_addr = ":8081";
    },
    [
      "operator_listen_addr off loopback requires operator_tls_cert_file and operator_tls_key_file in production_mode",
    ],
  ],
  [
    "a token file that is not a string",
    (c) => (c.operator_token_file = 7),
    ["operator_token_file must be a string"],
  ],
];

function configOf(mutate: Mutation = () => {}, env: Record<string, string> = {}) {
  const c = baseConfig();
  mutate(c);
  const r = checkProviderConfig(yamlOf(c), env);
  assert.ok(r.ok, r.ok ? "" : r.problems.join("\n"));
  return r.config;
}

describe("operator listener config keys", () => {
  for (const [name, mutate, expected] of REFUSALS) {
    it(`refuses ${name}, naming the key`, () => {
      // production_mode brings refusals of its own (https callbacks, …): only ours are compared.
      assert.deepEqual(
        problemsOf(mutate).filter((p) => p.includes("operator_")),
        expected,
      );
    });
  }

  it("defaults: 127.0.0.1:8081, operator-token beside the placement store, no TLS", () => {
    const config = configOf();
    assert.equal(config.operatorListenAddr, "127.0.0.1:8081");
    assert.equal(config.operatorTokenFile, "/tmp/fred/operator-token");
    assert.equal(config.operatorTlsCertFile, "");
    assert.equal(config.operatorClientCaFile, "");
  });

  it("takes each key, from the file or as PROVIDER_<KEY>", () => {
    const config = configOf(
      (c) => {
        c.operator_listen_addr = ":0";
        c.operator_tls_cert_file = "/etc/op.pem";
        c.operator_tls_key_file = "/etc/op.key";
        c.operator_client_ca_file = "/etc/ca.pem";
      },
      { PROVIDER_OPERATOR_TOKEN_FILE: "/srv/token" },
    );
    assert.equal(config.operatorListenAddr, ":0");
    assert.equal(config.operatorTokenFile, "/srv/token");
    assert.equal(config.operatorTlsCertFile, "/etc/op.pem");
    assert.equal(config.operatorTlsKeyFile, "/etc/op.key");
    assert.equal(config.operatorClientCaFile, "/etc/ca.pem");
  });

  it("production_mode takes the listener on loopback, or off loopback with TLS", () => {
    const production = (c: Record<string, unknown>) => {
      c.production_mode = true;
      c.operator_listen_addr = "10.0.0.5:8081";
      c.operator_tls_cert_file = "/etc/op.pem";
      c.operator_tls_key_file = "/etc/op.key";
    };
    const loopback = (c: Record<string, unknown>) => {
      c.production_mode = true;
      c.operator_listen_addr = "[::1]:8081";
    };
    for (const mutate of [production, loopback]) {
      const problems = problemsOf(mutate).filter((p) => p.startsWith("operator_"));
      assert.deepEqual(problems, []);
    }
  });

  it('"" turns the listener off; port 0 beside port 0 is no collision', () => {
    assert.equal(configOf((c) => (c.operator_listen_addr = "")).operatorListenAddr, "");
    assert.deepEqual(
      problemsOf((c) => {
        c.api_listen_addr = "127.0.0.1:0";
        c.operator_listen_addr = "127.0.0.1:0";
      }),
      [],
    );
    assert.deepEqual(
      problemsOf((c) => {
        c.api_listen_addr = "127.0.0.1:8080";
        c.operator_listen_addr = "127.0.0.2:8080";
      }),
      [],
    );
  });
});
