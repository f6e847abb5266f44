import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { checkProviderConfig, REFUSED_KEYS } from "../../../src/provider/config/index.ts";
import { runFred } from "../../support/index.ts";
import { PROVIDER_ADDRESS, PROVIDER_UUID } from "./fixtures.ts";

const EXAMPLE = "examples/providerd.yaml";
const SUBSTITUTES: Record<string, string> = {
  PROVIDER_UUID,
  PROVIDER_ADDRESS,
  KEYRING_DIR: "/tmp/fred-example/keyring",
  MOCK_HMAC_SECRET: "example-mock-secret-0123456789abcdef0123",
  STATE_DIR: "/tmp/fred-example",
};

function substitute(text: string): string {
  return text.replace(/<<([A-Z_]+)>>/g, (whole, name: string) => SUBSTITUTES[name] ?? whole);
}

function fred(args: string[], env: Record<string, string> = {}) {
  return runFred(args, { env });
}

/** Valid values for the refused keys (a refusal must not depend on the value). */
const SAMPLE: Record<string, unknown> = {
  tls_cert_file: "/etc/fred/api.pem",
  tls_key_file: "/etc/fred/api-key.pem",
  rate_limit_rps: 10,
  rate_limit_burst: 20,
  trusted_proxies: ["10.0.0.0/8"],
  cors_origins: ["*"],
  withdraw_interval: "1h",
  withdraw_limit: 100,
  sub_signer_count: 0,
};

describe("examples/providerd.yaml", () => {
  it("validates once its placeholders are substituted, with the pinned development settings", async () => {
    const text = await readFile(EXAMPLE, "utf8");
    const placeholders = [...new Set([...text.matchAll(/<<([A-Z_]+)>>/g)].map((m) => m[1]))];
    for (const name of placeholders.filter((n) => n !== "OLD_HMAC_SECRET" && n !== "NAME")) {
      assert.ok(name! in SUBSTITUTES, `placeholder ${name} is listed`);
      assert.ok(text.includes(`#   <<${name}>>`), `placeholder ${name} is documented in the header`);
    }
    const r = checkProviderConfig(substitute(text));
    assert.ok(r.ok, JSON.stringify(r));
    const c = r.config;
    assert.equal(c.productionMode, false);
    assert.equal(c.subSignerCount, 0);
    assert.equal(c.feeDenom, "umfx");
    assert.equal(c.callbackCanonicalPathPrefix, "");
    assert.equal(c.callbackSecret, "");
    assert.ok(c.backends.every((b) => b.hmacSecret !== "" && b.scheme === "http" && b.tlsCaFile === ""));
    assert.equal(c.rpcUrl, "http://127.0.0.1:26657");
  });

  it("is refused as written, so nobody runs the placeholders", async () => {
    const r = checkProviderConfig(await readFile(EXAMPLE, "utf8"));
    assert.equal(r.ok, false);
  });
});

describe("fred providerd (process)", () => {
  let dir: string;
  let good: string;
  let bad: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "fred-providerd-cli-"));
    good = join(dir, "good.yaml");
    bad = join(dir, "bad.yaml");
    await writeFile(good, substitute(await readFile(EXAMPLE, "utf8")));
    await writeFile(
      bad,
      substitute(await readFile(EXAMPLE, "utf8")).replace("log_level: info", "log_level: loud\nbogus: 1"),
    );
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("--check-config exits 0 and prints the redacted configuration", async () => {
    const r = await fred(["providerd", "--check-config", "-c", good]);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { ok: boolean; config: { backends: { hmacSecret: string }[] } };
    assert.equal(out.ok, true);
    assert.equal(out.config.backends[0]!.hmacSecret, "[redacted]");
    assert.ok(!r.stdout.includes(SUBSTITUTES.MOCK_HMAC_SECRET!));
  });

  it("--check-config exits 1 listing every problem, env overrides included", async () => {
    const r = await fred(["providerd", "--check-config", "-c", bad], { PROVIDER_GAS_ADJUSTMENT: "5" });
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout) as { ok: boolean; problems: string[] };
    assert.deepEqual(out.problems, [
      'unknown key "bogus"',
      "log_level must be one of debug, info, warn, error",
      "gas_adjustment must be between 1.0 and 3.0",
    ]);
    assert.match(r.stderr, / {2}- unknown key "bogus"/);
  });

  it("--check-config refuses keyring_backend os (PROVIDER_KEYRING_BACKEND) before any start", async () => {
    const r = await fred(["providerd", "--check-config", "-c", good], { PROVIDER_KEYRING_BACKEND: "os" });
    assert.equal(r.code, 1, r.stdout);
    const out = JSON.parse(r.stdout) as { ok: boolean; problems: string[] };
    assert.equal(out.problems.length, 1, r.stdout);
    assert.match(out.problems[0] ?? "", /^keyring_backend is "os" .* use "file" .* or "test"/);
  });

  it("--check-config exits 1 naming every key that is not effective yet, from the file or the environment", async () => {
    const refusedFile = join(dir, "refused.yaml");
    const keys = Object.keys(REFUSED_KEYS).filter((k) => !REFUSED_KEYS[k]!.atDefault);
    const extra = keys.map((k) => `${k}: ${JSON.stringify(SAMPLE[k] ?? "x")}`).join("\n");
    await writeFile(refusedFile, `${substitute(await readFile(EXAMPLE, "utf8"))}\n${extra}\n`);
    const r = await fred(["providerd", "--check-config", "-c", refusedFile], {
      PROVIDER_GRPC_ENDPOINT: "node.example.com:9090",
    });
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout) as { ok: boolean; problems: string[] };
    assert.equal(out.ok, false);
    assert.deepEqual(
      out.problems.filter((p) => !p.startsWith("grpc_")).sort(),
      keys.map((k) => `${k}: ${REFUSED_KEYS[k]!.reason}`).sort(),
    );
    assert.deepEqual(
      out.problems.filter((p) => p.startsWith("grpc_")),
      [
        'grpc_endpoint (from PROVIDER_GRPC_ENDPOINT): only the default "localhost:9090" is accepted; this implementation reads the chain through CometBFT RPC: set rpc_url',
      ],
    );
    for (const k of keys) assert.match(r.stderr, new RegExp(` {2}- ${k}: not supported yet`));

    const fromEnv = await fred(["providerd", "--check-config", "-c", good], {
      PROVIDER_GRPC_TLS_ENABLED: "true",
    });
    assert.equal(fromEnv.code, 1);
    const envProblems = (JSON.parse(fromEnv.stdout) as { problems: string[] }).problems;
    assert.equal(envProblems.length, 1);
    assert.match(envProblems[0]!, /^grpc_tls_enabled \(from PROVIDER_GRPC_TLS_ENABLED\): .*set rpc_url$/);
  });

  it("--check-config passes a file that sets only effective keys, gRPC at its defaults included", async () => {
    const atDefaults = join(dir, "grpc-defaults.yaml");
    await writeFile(
      atDefaults,
      `${substitute(await readFile(EXAMPLE, "utf8"))}\ngrpc_endpoint: localhost:9090\ngrpc_tls_enabled: false\n`,
    );
    const r = await fred(["providerd", "--check-config", "-c", atDefaults], {
      PROVIDER_GRPC_TLS_SKIP_VERIFY: "false",
      PROVIDER_RECONCILIATION_INTERVAL: "10m",
    });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { ok: boolean; config: { reconciliationIntervalMs: number } };
    assert.equal(out.ok, true);
    assert.equal(out.config.reconciliationIntervalMs, 600_000);
  });

  it("without --check-config refuses to start when the placement store was never created", async () => {
    const r = await fred(["providerd", "-c", good]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /placement store .* does not exist/);
  });

  it("reports an unreadable file clearly", async () => {
    const r = await fred(["providerd", "--check-config", "-c", join(dir, "missing.yaml")]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot read config file .*missing\.yaml/);
  });
});
