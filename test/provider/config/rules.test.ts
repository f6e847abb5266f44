import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backend, OTHER_ADDRESS, problemsOf, SECRET_1, SECRET_2, SKU_A } from "./fixtures.ts";

type Mutation = (c: Record<string, unknown>) => void;

/** One row per validation rule: the mutation and the exact message(s) it must produce. */
const RULES: [string, Mutation, string[]][] = [
  ["required keys", (c) => delete c.keyring_dir, ["keyring_dir is required"]],
  ["blank required key", (c) => (c.key_name = ""), ["key_name is required"]],
  [
    "placement store path required",
    (c) => delete c.placement_store_db_path,
    ["placement_store_db_path is required (create the store with `fred placement init`)"],
  ],
  ["backends required", (c) => delete c.backends, ["backends is required"]],
  [
    "callback_base_url left out with a fixed API port",
    (c) => delete c.callback_base_url,
    [
      "callback_base_url is required unless api_listen_addr has port 0 (providerd then derives it from the bound address)",
    ],
  ],
  [
    "derived callback_base_url with a path prefix",
    (c) => {
      delete c.callback_base_url;
      c.api_listen_addr = "127.0.0.1:0";
      c.callback_canonical_path_prefix = "/api";
    },
    ["callback_canonical_path_prefix must be empty when callback_base_url is derived"],
  ],
  ["at least one backend", (c) => (c.backends = []), ["backends must list at least one backend"]],
  [
    "provider_uuid canonical",
    (c) => (c.provider_uuid = "0190F3A2-7C1E-7000-8000-0000000000AA"),
    ["provider_uuid must be a canonical lowercase UUID"],
  ],
  [
    "provider_address bech32 with prefix",
    (c) => (c.provider_address = "cosmos1abc"),
    ['provider_address must be a bech32 account address with prefix "manifest"'],
  ],
  ["log_level", (c) => (c.log_level = "trace"), ["log_level must be one of debug, info, warn, error"]],
  ["keyring_backend", (c) => (c.keyring_backend = "kwallet"), ["keyring_backend must be one of file, test"]],
  [
    "keyring_backend os",
    (c) => (c.keyring_backend = "os"),
    [
      'keyring_backend is "os" (the system secret service), which Fred does not support: use "file" (encrypted, passphrase in FRED_KEYRING_PASSPHRASE) or "test" (plaintext, development only)',
    ],
  ],
  ["backend name required", (c) => delete backend(c, 1).name, ["backends[1].name is required"]],
  [
    "backend name whitespace",
    (c) => (backend(c, 1).name = " two"),
    ["backends[1].name must be non-blank printable text without leading or trailing whitespace"],
  ],
  [
    "backend name unique (case-sensitive)",
    (c) => (backend(c, 1).name = "one"),
    ['backends[1].name "one" duplicates backends[0].name'],
  ],
  ["backend url required", (c) => delete backend(c, 0).url, ["backends[0].url is required"]],
  [
    "backend url scheme",
    (c) => (backend(c, 0).url = "ftp://127.0.0.1:9001"),
    ["backends[0].url must be an absolute http:// or https:// URL, or unix:/absolute/socket/path"],
  ],
  [
    "backend url relative",
    (c) => (backend(c, 0).url = "127.0.0.1:9001"),
    ["backends[0].url must be an absolute http:// or https:// URL, or unix:/absolute/socket/path"],
  ],
  [
    "backend url user info",
    (c) => (backend(c, 0).url = "http://user:pw@127.0.0.1:9001"),
    ["backends[0].url must not contain user info"],
  ],
  [
    "backend url path",
    (c) => (backend(c, 0).url = "http://127.0.0.1:9001/api"),
    ["backends[0].url must be an origin with no path, query or fragment"],
  ],
  [
    "backend url empty query marker",
    (c) => (backend(c, 0).url = "http://127.0.0.1:9001?"),
    ["backends[0].url must be an origin with no path, query or fragment"],
  ],
  [
    "backend url empty fragment marker",
    (c) => (backend(c, 0).url = "http://127.0.0.1:9001#"),
    ["backends[0].url must be an origin with no path, query or fragment"],
  ],
  [
    "backend url port range",
    (c) => (backend(c, 0).url = "http://127.0.0.1:0"),
    ["backends[0].url port must be a number between 1 and 65535"],
  ],
  [
    "backend url port too large",
    (c) => (backend(c, 0).url = "http://127.0.0.1:65536"),
    ["backends[0].url port must be a number between 1 and 65535"],
  ],
  [
    "backend url dot host",
    (c) => (backend(c, 0).url = "http://.:9001"),
    ["backends[0].url must have a hostname"],
  ],
  [
    "backend url non-ASCII host",
    (c) => (backend(c, 0).url = "http://bücher.example:9001"),
    ["backends[0].url hostname must be ASCII (use punycode for internationalized names)"],
  ],
  [
    "hmac_secret length",
    (c) => (backend(c, 0).hmac_secret = "short"),
    ["backends[0].hmac_secret must be at least 32 bytes"],
  ],
  [
    "hmac_secret pairwise distinct",
    (c) => (backend(c, 1).hmac_secret = SECRET_1),
    ["backends[1].hmac_secret must differ from backends[0].hmac_secret; every HMAC key must be unique"],
  ],
  [
    "hmac_secret_previous distinct from every key",
    (c) => (backend(c, 1).hmac_secret_previous = SECRET_1),
    [
      "backends[1].hmac_secret_previous must differ from backends[0].hmac_secret; every HMAC key must be unique",
    ],
  ],
  [
    "hmac_secret on all or none",
    (c) => delete backend(c, 1).hmac_secret,
    ["hmac_secret must be set on every backend or on none"],
  ],
  [
    "some authentication required",
    (c) => {
      delete backend(c, 0).hmac_secret;
      delete backend(c, 1).hmac_secret;
    },
    ["set hmac_secret on every backend (or the legacy callback_secret outside production_mode)"],
  ],
  [
    "legacy callback_secret not combined",
    (c) => (c.callback_secret = "legacy-fleet-secret-0123456789abcdef"),
    ["callback_secret cannot be combined with backends[].hmac_secret"],
  ],
  [
    "legacy callback_secret length",
    (c) => {
      delete backend(c, 0).hmac_secret;
      delete backend(c, 1).hmac_secret;
      c.callback_secret = "too-short";
    },
    ["callback_secret must be at least 32 bytes"],
  ],
  [
    "hmac_secret_previous needs hmac_secret",
    (c) => {
      delete backend(c, 0).hmac_secret;
      delete backend(c, 1).hmac_secret;
      c.callback_secret = "legacy-fleet-secret-0123456789abcdef";
      backend(c, 0).hmac_secret_previous = "previous-key-for-one-0123456789abcdef";
    },
    ["backends[0].hmac_secret_previous requires hmac_secret on the same backend"],
  ],
  [
    "at most one default",
    (c) => (backend(c, 1).default = true),
    ["at most one backend may set default: true (backends[0], backends[1] do)"],
  ],
  [
    "SKU canonical UUID",
    (c) => (backend(c, 0).skus = ["0190F3A2-7C1E-7000-8000-00000000000A"]),
    ["backends[0].skus[0] must be a canonical lowercase UUID"],
  ],
  [
    "SKU listed once",
    (c) => (backend(c, 0).skus = [SKU_A, SKU_A]),
    [`backends[0].skus lists ${SKU_A} more than once`],
  ],
  [
    "billing-only SKU canonical",
    (c) => (c.billing_only_skus = ["not-a-uuid"]),
    ["billing_only_skus[0] must be a canonical lowercase UUID"],
  ],
  [
    "billing-only SKU served by no backend",
    (c) => (c.billing_only_skus = [SKU_A]),
    [`billing_only_skus entry ${SKU_A} is served by backend "one"; it must be served by none`],
  ],
  [
    "billing-only SKU listed once",
    (c) =>
      (c.billing_only_skus = [
        "0190f3a2-7c1e-7000-8000-0000000000b1",
        "0190f3a2-7c1e-7000-8000-0000000000b1",
      ]),
    ["billing_only_skus lists 0190f3a2-7c1e-7000-8000-0000000000b1 more than once"],
  ],
  [
    "TLS options require https",
    (c) => (backend(c, 0).tls_ca_file = "/etc/ca.pem"),
    ["backends[0] TLS settings (tls_ca_file, tls_skip_verify, tls_client_*) require an https:// url"],
  ],
  [
    "client cert and key together",
    (c) => {
      backend(c, 0).url = "https://b1.example.com";
      backend(c, 0).tls_client_cert_file = "/etc/c.pem";
    },
    ["backends[0].tls_client_cert_file and backends[0].tls_client_key_file must be set together"],
  ],
  [
    "backend timeout positive",
    (c) => (backend(c, 0).timeout = "0s"),
    ["backends[0].timeout must be greater than zero"],
  ],
  [
    "fenced needs a remaining backend",
    (c) => {
      backend(c, 0).fenced = true;
      backend(c, 1).fenced = true;
    },
    ["at least one backend must not be fenced"],
  ],
  [
    "fenced needs per-backend keys",
    (c) => {
      delete backend(c, 0).hmac_secret;
      delete backend(c, 1).hmac_secret;
      c.callback_secret = "legacy-fleet-secret-0123456789abcdef";
      backend(c, 1).fenced = true;
    },
    ["fenced backends require hmac_secret on every backend"],
  ],
  [
    "callback_base_url scheme",
    (c) => (c.callback_base_url = "ws://127.0.0.1:8080"),
    ["callback_base_url must be an absolute http:// or https:// URL"],
  ],
  [
    "callback_base_url user info",
    (c) => (c.callback_base_url = "http://a@127.0.0.1:8080"),
    ["callback_base_url must not contain user info"],
  ],
  [
    "callback_base_url fragment",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/#x"),
    ["callback_base_url must not contain a fragment"],
  ],
  [
    "callback_base_url empty query",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/?"),
    ['callback_base_url must not end with an empty "?"'],
  ],
  [
    "callback_base_url reserved query key",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/?operation_id=x"),
    ["callback_base_url must not carry an operation_id or lifecycle_id query key"],
  ],
  [
    "callback_base_url raw query bytes",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/?a=b c"),
    ["callback_base_url query is malformed or not percent-encoded"],
  ],
  [
    "callback_base_url dot segment",
    (c) => {
      c.callback_base_url = "http://127.0.0.1:8080/api/../fred";
      c.callback_canonical_path_prefix = "/fred";
    },
    ['callback_base_url path must not contain empty, "." or ".." segments'],
  ],
  [
    "callback_base_url encoded separator",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/api%2Ffred"),
    ["callback_base_url path must not contain percent-encoded separators"],
  ],
  [
    "callback_base_url backslash",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/api\\fred"),
    ["callback_base_url path must not contain backslashes"],
  ],
  [
    "canonical path prefix must match",
    (c) => (c.callback_base_url = "http://127.0.0.1:8080/api/fred"),
    ['callback_canonical_path_prefix must equal the path of callback_base_url ("/api/fred"), got ""'],
  ],
  [
    "production: https both ways, token tracker, no loopback",
    (c) => (c.production_mode = true),
    [
      "backends[0].url must use https:// in production_mode",
      "backends[0].url must not point at a loopback, link-local or unspecified address in production_mode",
      "backends[1].url must use https:// in production_mode",
      "backends[1].url must not point at a loopback, link-local or unspecified address in production_mode",
      "callback_base_url must use https:// in production_mode",
      "callback_base_url must not point at a loopback, link-local or unspecified address in production_mode",
      "production_mode requires token_tracker_db_path",
    ],
  ],
  [
    "production: every backend keyed, no legacy secret, verified TLS",
    (c) => {
      c.production_mode = true;
      c.token_tracker_db_path = "/var/lib/fred/tokens.db";
      c.callback_base_url = "https://fred.example.com";
      c.callback_secret = "legacy-fleet-secret-0123456789abcdef";
      c.backends = [
        { name: "a", url: "https://a.example.com", tls_skip_verify: true },
        { name: "b", url: "https://169.254.10.1:9001" },
      ];
    },
    [
      "backends[0].tls_skip_verify is not allowed in production_mode",
      "backends[1].url must not point at a loopback, link-local or unspecified address in production_mode",
      "callback_secret (legacy, fleet-wide) is not allowed in production_mode; set backends[].hmac_secret",
      "production_mode requires hmac_secret on every backend",
    ],
  ],
  [
    "production: no gRPC TLS skip-verify (gRPC is refused beyond its defaults)",
    (c) => {
      c.production_mode = true;
      c.token_tracker_db_path = "/var/lib/fred/tokens.db";
      c.callback_base_url = "https://fred.example.com";
      c.backends = [{ name: "a", url: "https://a.example.com", hmac_secret: SECRET_1 }];
      c.grpc_tls_enabled = true;
      c.grpc_tls_skip_verify = true;
    },
    [
      "grpc_tls_enabled: only the default false is accepted; this implementation reads the chain through CometBFT RPC: set rpc_url",
      "grpc_tls_skip_verify: only the default false is accepted; this implementation reads the chain through CometBFT RPC: set rpc_url",
    ],
  ],
  [
    "store paths distinct",
    (c) => (c.payload_store_db_path = "/tmp/fred/placements.db"),
    ["placement_store_db_path and payload_store_db_path must be different files"],
  ],
  [
    "websocket_url scheme",
    (c) => (c.websocket_url = "http://x:26657"),
    ["websocket_url must be a ws:// or wss:// URL"],
  ],
  ["rpc_url scheme", (c) => (c.rpc_url = "tcp://x:26657"), ["rpc_url must be an http:// or https:// URL"]],
  [
    "api_listen_addr shape",
    (c) => (c.api_listen_addr = "8080"),
    ['api_listen_addr must be "host:port" or ":port"'],
  ],
  ["durations positive", (c) => (c.shutdown_timeout = "0s"), ["shutdown_timeout must be greater than zero"]],
  ["negative durations", (c) => (c.tx_timeout = "-1s"), ["tx_timeout must not be negative"]],
  [
    "callback budgets positive",
    (c) => {
      c.callback_rate_limit_rps = 0;
      c.callback_rate_limit_burst = -5;
    },
    [
      "callback_rate_limit_rps must be greater than zero",
      "callback_rate_limit_burst must be greater than zero",
    ],
  ],
  [
    "reconnect initial ≤ max",
    (c) => (c.websocket_reconnect_initial = "2m"),
    ["websocket_reconnect_initial must not exceed websocket_reconnect_max"],
  ],
  ["gas_adjustment range", (c) => (c.gas_adjustment = 3.5), ["gas_adjustment must be between 1.0 and 3.0"]],
  [
    "max_gas_limit ≥ gas_limit",
    (c) => (c.max_gas_limit = 1000),
    ["max_gas_limit must be 0 (uncapped) or at least gas_limit"],
  ],
  ["fee_denom", (c) => (c.fee_denom = "1x"), ["fee_denom must be a valid denomination such as umfx"]],
  [
    "API TLS files together",
    (c) => (c.tls_cert_file = "/etc/api.pem"),
    ["tls_cert_file and tls_key_file must be set together"],
  ],
  [
    "trusted_proxies CIDRs",
    (c) => (c.trusted_proxies = ["10.0.0.1"]),
    ["trusted_proxies[0] must be a CIDR block such as 10.0.0.0/8"],
  ],
  ["withdraw_limit range", (c) => (c.withdraw_limit = 101), ["withdraw_limit must be between 1 and 100"]],
  [
    "credit check ≤ withdraw interval",
    (c) => (c.credit_check_interval = "2h"),
    ["credit_check_interval must not exceed withdraw_interval (0s couples them)"],
  ],
  [
    "sub-signer amounts are coins",
    (c) => (c.sub_signer_min_balance = "lots"),
    ["sub_signer_min_balance must be an amount with denomination, e.g. 10000000umfx"],
  ],
  [
    "sub-signer amounts in fee_denom, a top-up above zero, at most 100 lanes",
    (c) => {
      c.sub_signer_count = 101;
      c.sub_signer_min_balance = "10uatom";
      c.sub_signer_top_up_amount = "0umfx";
    },
    [
      "sub_signer_count must be at most 100",
      "sub_signer_min_balance must be in fee_denom (umfx): the sub-signers pay their fees from it",
      "sub_signer_top_up_amount must be greater than zero",
    ],
  ],
  [
    "snapshot dir rules",
    (c) => {
      c.placement_snapshot_dir = "/tmp/fred";
      c.placement_snapshot_interval = "1m";
      c.placement_snapshot_retain = 0;
    },
    [
      "placement_snapshot_dir requires payload_store_db_path",
      "placement_snapshot_dir must not be the directory of a live database",
      "placement_snapshot_interval must be at least 5m",
      "placement_snapshot_retain must be between 1 and 1000",
    ],
  ],
  [
    "snapshot dir absolute",
    (c) => {
      c.placement_snapshot_dir = "snaps";
      c.payload_store_db_path = "/tmp/fred/payloads.db";
    },
    ["placement_snapshot_dir must be an absolute, clean path"],
  ],
  [
    "sub-signer amounts are not checked without sub-signers",
    (c) => {
      c.sub_signer_count = 0;
      c.fee_denom = "uatom";
    },
    [],
  ],
  [
    "legacy idempotency tenants distinct addresses",
    (c) => (c.maintenance_legacy_idempotency_tenants = [OTHER_ADDRESS, OTHER_ADDRESS, "nope"]),
    [
      `maintenance_legacy_idempotency_tenants lists ${OTHER_ADDRESS} more than once`,
      'maintenance_legacy_idempotency_tenants[2] must be a bech32 account address with prefix "manifest"',
    ],
  ],
  [
    'legacy idempotency tenants: "*" admits every tenant',
    (c) => (c.maintenance_legacy_idempotency_tenants = ["*"]),
    [],
  ],
  [
    'legacy idempotency tenants: "*" mixed with addresses',
    (c) => (c.maintenance_legacy_idempotency_tenants = [OTHER_ADDRESS, "*"]),
    [
      'maintenance_legacy_idempotency_tenants: "*" admits every tenant and must be the list\'s only entry, not mixed with addresses',
    ],
  ],
  // A backend co-located with providerd, reached over a Unix socket (unix:/absolute/path).
  ["backend url unix socket", (c) => (backend(c, 1).url = "unix:/run/fred/docker-backend.sock"), []],
  [
    "backend url unix socket: relative path",
    (c) => (backend(c, 1).url = "unix:run/backend.sock"),
    [
      "backends[1].url must name an absolute socket path (e.g. unix:/run/fred/backend.sock), not a relative one",
    ],
  ],
  [
    "backend url unix socket: the unix:// form",
    (c) => (backend(c, 1).url = "unix:///run/backend.sock"),
    [
      "backends[1].url must be unix: followed by an absolute path with one leading slash (e.g. unix:/run/fred/backend.sock), not a unix:// URL",
    ],
  ],
  [
    "backend url unix socket: not normalized",
    (c) => (backend(c, 1).url = "unix:/run//backend.sock"),
    ['backends[1].url socket path must be normalized: no empty, "." or ".." segments and no trailing slash'],
  ],
  [
    "backend url unix socket: longer than a socket address holds",
    (c) => (backend(c, 1).url = `unix:/run/${"s".repeat(100)}.sock`),
    ["backends[1].url socket path must be at most 107 bytes (the kernel's limit for a socket address)"],
  ],
  [
    "backend url unix socket: TLS keys refused, each named",
    (c) => {
      Object.assign(backend(c, 1), {
        url: "unix:/run/fred/docker-backend.sock",
        tls_ca_file: "/etc/fred/ca.pem",
        tls_client_cert_file: "/etc/fred/c.pem",
        tls_client_key_file: "/etc/fred/k.pem",
      });
    },
    [
      "backends[1].tls_ca_file, backends[1].tls_client_cert_file, backends[1].tls_client_key_file cannot be used with a unix: url (TLS over a local socket protects nothing; the socket's file mode decides who connects)",
    ],
  ],
  [
    "backend url unix socket: tls_skip_verify refused too",
    (c) => Object.assign(backend(c, 1), { url: "unix:/run/b.sock", tls_skip_verify: true }),
    [
      "backends[1].tls_skip_verify cannot be used with a unix: url (TLS over a local socket protects nothing; the socket's file mode decides who connects)",
    ],
  ],
  [
    "production: a unix socket backend is admitted (local by construction) beside an https one",
    (c) => {
      c.production_mode = true;
      c.token_tracker_db_path = "/var/lib/fred/tokens.db";
      c.callback_base_url = "https://fred.example.com";
      c.backends = [
        { name: "a", url: "https://a.example.com", hmac_secret: SECRET_1, default: true },
        { name: "b", url: "unix:/run/fred/docker-backend.sock", hmac_secret: SECRET_2 },
      ];
    },
    [],
  ],
  [
    "database_url: the stores are in PostgreSQL, the SQLite keys are refused, state_dir is required",
    (c) => {
      c.database_url = "postgres://fred@db.example.com/fred?sslmode=verify-full";
      c.payload_store_db_path = "/var/lib/fred/payloads.db";
      c.token_tracker_db_path = "/var/lib/fred/tokens.db";
      c.placement_snapshot_dir = "/var/backups/fred";
    },
    [
      "placement_store_db_path must not be set with database_url: that store is in PostgreSQL",
      "payload_store_db_path must not be set with database_url: that store is in PostgreSQL",
      "token_tracker_db_path must not be set with database_url: that store is in PostgreSQL",
      "placement_snapshot_dir must not be set with database_url: snapshots copy the SQLite files; back PostgreSQL up with its own tools",
      "state_dir is required with database_url (the instance's control socket and operator token live there)",
    ],
  ],
  [
    "database_url: a URL of PostgreSQL without its password; state_dir absolute; ha_advertise_url an origin",
    (c) => {
      delete c.placement_store_db_path;
      c.database_url = "postgres://fred:hunter2@db.example.com/fred";
      c.state_dir = "var/lib/fred";
      c.ha_advertise_url = "http://10.0.0.5:8080/api";
    },
    [
      "database_url must not hold the password: put it in database_password_file (mode 0600) or FRED_DATABASE_PASSWORD",
      "state_dir must be an absolute path",
      "ha_advertise_url must be an http:// or https:// origin such as https://10.0.0.5:8080 (no path)",
    ],
  ],
  [
    "database_url: another kind of URL",
    (c) => {
      delete c.placement_store_db_path;
      c.database_url = "mysql://db/fred";
      c.state_dir = "/var/lib/fred";
    },
    ["database_url must be a postgres:// or postgresql:// URL"],
  ],
  [
    "database_url: a complete production configuration",
    (c) => {
      delete c.placement_store_db_path;
      c.production_mode = true;
      c.database_url =
        "postgresql://fred@db.example.com:5432/fred?sslmode=verify-full&sslrootcert=/etc/fred/ca.pem";
      c.database_password_file = "/etc/fred/db-password";
      c.state_dir = "/var/lib/fred";
      c.ha_advertise_url = "https://10.0.0.5:8080";
      c.callback_base_url = "https://fred.example.com";
      c.backends = [{ name: "a", url: "https://a.example.com", hmac_secret: SECRET_1, default: true }];
    },
    [],
  ],
  [
    "the keys of database_url are refused without it",
    (c) => {
      c.database_password_file = "/etc/fred/db-password";
      c.state_dir = "/var/lib/fred";
      c.ha_advertise_url = "https://10.0.0.5:8080";
    },
    [
      "database_password_file is for database_url (providerd on PostgreSQL); remove it",
      "state_dir is for database_url (providerd on PostgreSQL); remove it",
      "ha_advertise_url is for database_url (providerd on PostgreSQL); remove it",
    ],
  ],
];

/**
 * Rules of keys refused until their feature is built (src/provider/config/refused.ts):
 * they are ready for the change that makes the key effective, so they are checked with
 * the refusal lifted; with it, each such mutation yields only refusals.
 */
const RULES_OF_REFUSED_KEYS: [string, Mutation, string[]][] = [];

describe("providerd config: one message per rule", () => {
  it("maintenance_legacy_idempotency_tenants takes effect (no longer refused)", () =>
    assert.deepEqual(
      problemsOf((c) => (c.maintenance_legacy_idempotency_tenants = [OTHER_ADDRESS])),
      [],
    ));

  for (const [name, mutate, expected] of RULES) {
    it(name, () => assert.deepEqual(problemsOf(mutate), expected));
  }

  it("the base configuration has no problems", () =>
    assert.deepEqual(
      problemsOf(() => {}),
      [],
    ));
});

describe("providerd config: rules of keys not effective yet", () => {
  for (const [name, mutate, expected] of RULES_OF_REFUSED_KEYS) {
    it(`${name} (refusal lifted)`, () =>
      assert.deepEqual(problemsOf(mutate, {}, { refusedKeys: {} }), expected));
    it(`${name}: refused while its feature is not built`, () => {
      const problems = problemsOf(mutate);
      assert.ok(problems.length > 0);
      for (const p of problems) assert.match(p, /^[a-z_]+: not supported yet: .+; remove the key$/);
    });
  }
});
