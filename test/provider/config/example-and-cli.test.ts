import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { checkProviderConfig } from "../../../src/provider/config/index.ts";
import { PROVIDER_ADDRESS, PROVIDER_UUID } from "./fixtures.ts";

const run = promisify(execFile);
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

async function fred(args: string[], env: Record<string, string> = {}) {
  try {
    const r = await run(process.execPath, ["bin/fred.js", ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

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
    const r = await fred(["providerd", "--check-config", "-c", bad], { PROVIDER_WITHDRAW_LIMIT: "0" });
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout) as { ok: boolean; problems: string[] };
    assert.deepEqual(out.problems, [
      'unknown key "bogus"',
      "log_level must be one of debug, info, warn, error",
      "withdraw_limit must be between 1 and 100",
    ]);
    assert.match(r.stderr, / {2}- unknown key "bogus"/);
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
