import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runFred } from "../support/index.ts";

const KEY = "8f7f28ced235ea1050d4f484312892104ba52a2fa8e8e631b431b3dc77e61d95";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const META = "6a896122d7bba3cfb7090000734c88c546c969b1f9f20aca28358b78a6a66d9c";
const VECTOR_TOKEN_PREFIX =
  "eyJ0ZW5hbnQiOiJtYW5pZmVzdDFtNGgza3JkbjVuZmFzczlnOTVkcDZhd3RycGRqeGo2aGR5ZTR2dSIs";

describe("fred token (CLI)", () => {
  it("mint prints only the token; verify accepts it within the window", async () => {
    const mint = await runFred([
      "token",
      "mint",
      "--key-hex",
      KEY,
      "--lease",
      LEASE,
      "--timestamp",
      "1735689600",
    ]);
    assert.equal(mint.code, 0, mint.stderr);
    assert.match(mint.stdout, /^[A-Za-z0-9+/]+=*\n$/);
    assert.ok(mint.stdout.startsWith(VECTOR_TOKEN_PREFIX));
    const token = mint.stdout.trim();
    const ok = await runFred(["token", "verify", "--lease", LEASE, "--now", "1735689620", token]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), {
      tenant: "manifest1m4h3krdn5nfass9g95dp6awtrpdjxj6hdye4vu",
      kind: "access",
    });
    const late = await runFred(["token", "verify", "--lease", LEASE, "--now", "1735689631", token]);
    assert.equal(late.code, 1);
    assert.deepEqual(JSON.parse(late.stdout), { error: "token has expired" });
    const wrongLease = await runFred([
      "token",
      "verify",
      "--lease",
      LEASE.replace(/1$/, "2"),
      "--now",
      "1735689600",
      token,
    ]);
    assert.equal(wrongLease.code, 1);
    assert.match(JSON.parse(wrongLease.stdout).error, /another lease/);
  });

  it("mints payload tokens from a mnemonic with a custom prefix", async () => {
    const words =
      "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
    const mint = await runFred([
      "token",
      "mint",
      "--mnemonic",
      words,
      "--lease",
      LEASE,
      "--meta-hash",
      META,
      "--prefix",
      "cosmos",
    ]);
    assert.equal(mint.code, 0, mint.stderr);
    const verify = await runFred([
      "token",
      "verify",
      "--lease",
      LEASE,
      "--prefix",
      "cosmos",
      mint.stdout.trim(),
    ]);
    assert.deepEqual(JSON.parse(verify.stdout), {
      tenant: "cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4",
      kind: "payload",
    });
  });

  it("mints with a dev account's key (--from --home), as fred lease signs", async (t) => {
    const home = mkdtempSync(join(tmpdir(), "fred-token-home-"));
    t.after(() => rmSync(home, { recursive: true, force: true }));
    const account = { name: "tenant1", address: "unused", mnemonic: "unused", private_key_hex: KEY };
    writeFileSync(
      join(home, "keys.json"),
      JSON.stringify({ chain_id: "fred-devnet-1", accounts: [account] }),
    );
    const at = ["--lease", LEASE, "--timestamp", "1735689600"];
    const fromAccount = await runFred(["token", "mint", "--from", "tenant1", "--home", home, ...at]);
    assert.equal(fromAccount.code, 0, fromAccount.stderr);
    const fromHex = await runFred(["token", "mint", "--key-hex", KEY, ...at]);
    assert.equal(fromAccount.stdout, fromHex.stdout);
    const unknown = await runFred(["token", "mint", "--from", "tenant9", "--home", home, ...at]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /tenant9/);
    const both = await runFred([
      "token",
      "mint",
      "--from",
      "tenant1",
      "--home",
      home,
      "--key-hex",
      KEY,
      ...at,
    ]);
    assert.equal(both.code, 1);
    assert.match(both.stderr, /exactly one key/);
  });

  it("refuses bad input with a message on stderr and nothing on stdout", async () => {
    for (const args of [
      ["token", "mint", "--lease", LEASE],
      ["token", "mint", "--key-hex", "00", "--lease", LEASE],
      ["token", "mint", "--key-hex", KEY, "--lease", "not-a-uuid"],
      ["token", "mint", "--key-hex", KEY, "--lease", LEASE, "--meta-hash", "abc"],
      ["token", "mint", "--key-hex", KEY, "--lease", LEASE, "--timestamp", "soon"],
      ["token", "mint", "--mnemonic", "not a real mnemonic", "--lease", LEASE],
    ]) {
      const r = await runFred(args);
      assert.equal(r.code, 1, args.join(" "));
      assert.equal(r.stdout, "", args.join(" "));
      assert.notEqual(r.stderr, "", args.join(" "));
    }
    const garbage = await runFred(["token", "verify", "--lease", LEASE, "!!!"]);
    assert.equal(garbage.code, 1);
    assert.ok(JSON.parse(garbage.stdout).error);
  });

  it("has help with examples for every subcommand", async () => {
    for (const cmd of [["token", "mint"], ["token", "verify"], ["up"]]) {
      const r = await runFred([...cmd, "--help"]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /Examples:/, cmd.join(" "));
    }
  });
});
