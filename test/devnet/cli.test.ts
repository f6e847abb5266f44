/**
 * The pinned CLI forms: `fred devnet init` (idempotent, named dev accounts), `fred devnet
 * keys`, argument errors, and `--history-blocks` capping stored history across a restart.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { addressFromPubkey } from "../../src/auth/address.ts";
import { compressedPubkey, privateKeyFromMnemonic } from "../../src/auth/keys.ts";
import { devnet, runFred } from "../support/index.ts";
import { rpc } from "./helpers.ts";

describe("fred devnet CLI", () => {
  const homes: string[] = [];
  after(() => {
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  it("init creates named, funded accounts from fresh mnemonics and is idempotent", async () => {
    const home = mkdtempSync(join(tmpdir(), "fred-devnet-cli-"));
    homes.push(home);
    const first = await runFred(["devnet", "init", "--home", home, "--tenants", "3"]);
    assert.equal(first.code, 0, first.stderr);
    const out = JSON.parse(first.stdout);
    assert.equal(out.created, true);
    assert.equal(out.chain_id, "fred-devnet-1");
    assert.deepEqual(
      out.accounts.map((a: { name: string }) => a.name),
      ["provider", "tenant1", "tenant2", "tenant3", "faucet"],
    );
    const keysBefore = readFileSync(join(home, "keys.json"), "utf8");
    const keys = JSON.parse(keysBefore);
    const mnemonics = new Set(keys.accounts.map((a: { mnemonic: string }) => a.mnemonic));
    assert.equal(mnemonics.size, 5, "one fresh mnemonic per account");
    for (const a of keys.accounts) {
      const priv = privateKeyFromMnemonic(a.mnemonic);
      assert.equal(addressFromPubkey(compressedPubkey(priv), "manifest"), a.address);
      assert.equal(Buffer.from(priv).toString("hex"), a.private_key_hex);
    }
    const again = await runFred(["devnet", "init", "--home", home, "--tenants", "7"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(JSON.parse(again.stdout).created, false);
    assert.equal(readFileSync(join(home, "keys.json"), "utf8"), keysBefore, "keys kept");
  });

  it("refuses bad arguments and a missing home with a clear error", async () => {
    const missing = await runFred(["devnet", "keys", "--home", join(tmpdir(), "fred-devnet-nowhere-x1")]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no devnet keys in .*; run fred devnet init first/);
    assert.equal(missing.stdout, "");
    const badTenants = await runFred(["devnet", "init", "--home", "/tmp/x", "--tenants", "0"]);
    assert.notEqual(badTenants.code, 0);
    assert.match(badTenants.stderr, /--tenants/);
    const badTime = await runFred(["devnet", "start", "--home", "/tmp/x", "--block-time", "soon"]);
    assert.notEqual(badTime.code, 0);
    assert.match(badTime.stderr, /Go duration/);
  });

  it("--history-blocks keeps only the last N blocks, also after a restart", async () => {
    await using dn = await devnet({ args: ["--history-blocks", "3"] });
    for (let i = 0; i < 5; i++) await rpc(dn.rpc, "devnet_produce_block");
    const status = (await rpc(dn.rpc, "status")).result.sync_info;
    assert.equal(status.latest_block_height, "6");
    assert.equal(status.earliest_block_height, "4");
    const gone = await rpc(dn.rpc, "block", { height: "2" });
    assert.equal(gone.error.data, "height 2 is not available, lowest height is 4");
    assert.equal((await rpc(dn.rpc, "block", { height: "4" })).result.block.header.height, "4");
    await dn.proc.stop();
    await dn.restart();
    const s2 = (await rpc(dn.rpc, "status")).result.sync_info;
    assert.equal(s2.latest_block_height, "6");
    assert.equal(s2.earliest_block_height, "4");
  });
});
