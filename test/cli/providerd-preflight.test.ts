import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { Keyring } from "../../src/chain/keyring/index.ts";
import { Stack } from "../provider/e2e/stack.ts";
import { pickFreePort, runFred } from "../support/index.ts";

/**
 * `fred providerd --check-config --online` against a real stack (devnet, two mock
 * backends, a placement store, an encrypted keyring): a good config passes every check,
 * and each broken piece is named on its own FAIL line while the other checks still run.
 */
const PASSPHRASE = "a long enough preflight passphrase";
const stack = new Stack();
const env = { FRED_KEYRING_PASSPHRASE: PASSPHRASE };

before(async () => {
  await stack.start(undefined, (s) => {
    s.backendOverrides = [{ skus: [s.sku("docker-small")] }, {}];
    s.extraConfig = {
      keyring_dir: join(s.dir, "file-keyring"),
      keyring_backend: "file",
      billing_only_skus: [s.sku("billing-only")],
    };
  });
  await new Keyring({
    dir: join(stack.dir, "file-keyring"),
    backend: "file",
    passphrase: PASSPHRASE,
    scrypt: { n: 1024, r: 8, p: 1 },
  }).add("provider", stack.account("provider").mnemonic);
});

after(async () => {
  await stack.close();
});

/** The stack's config with `change` applied, written beside it. */
function variant(name: string, change: (config: Record<string, unknown>) => void): string {
  const config = parse(readFileSync(stack.configPath, "utf8")) as Record<string, unknown>;
  change(config);
  const path = join(stack.dir, `${name}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

const preflight = (config: string, extraEnv: Record<string, string> = env) =>
  runFred(["providerd", "--check-config", "--online", "-c", config], { env: extraEnv });

const failLines = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("FAIL "));

describe("fred providerd --check-config --online", () => {
  it("passes a good config, printing every check and the online results", async () => {
    const r = await preflight(stack.configPath);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(failLines(r.stderr), []);
    const address = stack.account("provider").address;
    assert.match(r.stderr, new RegExp(`^ok   keyring: key "provider" unlocks \\(${address}\\)$`, "m"));
    assert.match(r.stderr, /^ok {3}chain: .* serves /m);
    assert.match(r.stderr, /^ok {3}provider: /m);
    assert.match(r.stderr, /^ok {3}skus: 2 configured SKU\(s\) exist/m);
    assert.match(r.stderr, /^ok {3}placement store: .* opens \(2 pinned backend\(s\)\)$/m);
    assert.match(r.stderr, /^ok {3}backend mock-1: .* answers as storage /m);
    assert.match(r.stderr, /^ok {3}backend mock-2: .* answers as storage /m);
    const out = JSON.parse(r.stdout);
    assert.equal(out.ok, true);
    assert.equal(out.config.providerUuid, stack.keys.provider_uuid);
    assert.equal(out.online.ok, true);
    assert.ok(out.online.checks.every((c: { ok: boolean }) => c.ok));
  });

  it("names a wrong keyring passphrase", async () => {
    const r = await preflight(stack.configPath, {
      FRED_KEYRING_PASSPHRASE: "not the passphrase it was added with",
    });
    assert.equal(r.code, 1);
    const fails = failLines(r.stderr);
    assert.equal(fails.length, 1, r.stderr);
    assert.match(
      fails[0]!,
      /^FAIL keyring: key "provider" .*wrong passphrase.*: set FRED_KEYRING_PASSPHRASE/,
    );
    assert.equal(JSON.parse(r.stdout).online.ok, false);
  });

  it("names an unknown provider UUID", async () => {
    const unknown = randomUUID();
    const r = await preflight(variant("unknown-provider", (c) => (c.provider_uuid = unknown)));
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`^FAIL provider: no provider ${unknown} on .*: fix provider_uuid`, "m"),
    );
  });

  it("names a SKU the chain does not have", async () => {
    const missing = randomUUID();
    const path = variant("missing-sku", (c) => {
      (c.billing_only_skus as string[]).push(missing);
    });
    const r = await preflight(path);
    assert.equal(r.code, 1);
    const fails = failLines(r.stderr);
    assert.equal(fails.length, 1, r.stderr);
    assert.match(
      fails[0]!,
      new RegExp(`^FAIL sku ${missing}: .* in billing_only_skus does not exist on chain`),
    );
  });

  it("names an unreachable backend", async () => {
    const port = await pickFreePort();
    const path = variant("unreachable-backend", (c) => {
      (c.backends as { url: string }[])[1]!.url = `http://127.0.0.1:${port}`;
    });
    const r = await preflight(path);
    assert.equal(r.code, 1);
    const fails = failLines(r.stderr);
    assert.equal(fails.length, 1, r.stderr);
    assert.match(fails[0]!, new RegExp(`^FAIL backend mock-2: http://127.0.0.1:${port} does not answer`));
  });

  it("names an unreachable chain or another chain, and says what it could not check", async () => {
    const port = await pickFreePort();
    const r = await preflight(variant("no-chain", (c) => (c.rpc_url = `http://127.0.0.1:${port}`)));
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^FAIL chain: no answer from http://127.0.0.1:${port}`, "m"));
    assert.match(r.stderr, /^FAIL provider: not checked/m);

    const other = await preflight(variant("other-chain", (c) => (c.chain_id = "other-chain-1")));
    assert.equal(other.code, 1);
    assert.match(
      other.stderr,
      /^FAIL chain: the node at .* serves .*, but chain_id is other-chain-1: fix chain_id or rpc_url$/m,
    );
  });

  it("says to run fred placement init when the placement store does not exist", async () => {
    const r = await preflight(
      variant("no-store", (c) => (c.placement_store_db_path = join(stack.dir, "absent", "placements.db"))),
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^FAIL placement store: .* does not exist: .*fred placement init/m);
    assert.match(r.stderr, /^ok {3}backend mock-1: .* answers \(no placement store yet/m);
  });

  it("--check-config alone stays offline; --online without --check-config is refused", async () => {
    const offline = await runFred(["providerd", "--check-config", "-c", stack.configPath]);
    assert.equal(offline.code, 0, offline.stderr);
    assert.equal(JSON.parse(offline.stdout).online, undefined);
    assert.doesNotMatch(offline.stderr, /^ok {3}/m);

    const alone = await runFred(["providerd", "--online", "-c", stack.configPath], { env });
    assert.equal(alone.code, 1);
    assert.match(alone.stderr, /--online goes with --check-config/);
  });
});
