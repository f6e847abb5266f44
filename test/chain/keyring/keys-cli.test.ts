import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runFred } from "../../support/index.ts";

const MNEMONIC =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

describe("fred keys (CLI)", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "fred-keys-cli-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("add (recover) / show / list with the test backend", async () => {
    const add = await runFred([
      "keys",
      "add",
      "provider",
      "--keyring-dir",
      dir,
      "--keyring-backend",
      "test",
      "--mnemonic",
      MNEMONIC,
    ]);
    assert.equal(add.code, 0, add.stderr);
    const added = JSON.parse(add.stdout);
    assert.deepEqual(Object.keys(added), ["name", "address", "pubkey"]);
    assert.match(added.address, /^manifest1/);
    assert.equal(Buffer.from(added.pubkey, "base64").length, 33);
    const show = await runFred([
      "keys",
      "show",
      "provider",
      "--keyring-dir",
      dir,
      "--keyring-backend",
      "test",
    ]);
    assert.equal(show.code, 0, show.stderr);
    assert.deepEqual(JSON.parse(show.stdout), added);
    const viaStdin = await runFred(
      ["keys", "add", "again", "--keyring-dir", dir, "--keyring-backend", "test", "--mnemonic", "-"],
      {
        input: `${MNEMONIC}\n`,
      },
    );
    assert.equal(viaStdin.code, 0, viaStdin.stderr);
    assert.equal(JSON.parse(viaStdin.stdout).address, added.address);
    const list = await runFred(["keys", "list", "--keyring-dir", dir, "--keyring-backend", "test"]);
    assert.deepEqual(JSON.parse(list.stdout), [{ ...added, name: "again" }, added]);
  });

  it("add without a mnemonic prints the generated one once, file backend needs the passphrase", async () => {
    const env = { FRED_KEYRING_PASSPHRASE: "a long enough passphrase" };
    const add = await runFred(["keys", "add", "fresh", "--keyring-dir", dir, "--keyring-backend", "file"], {
      env,
    });
    assert.equal(add.code, 0, add.stderr);
    const added = JSON.parse(add.stdout);
    assert.equal(added.mnemonic.split(" ").length, 24);
    assert.match(add.stderr, /printed once/);
    const show = await runFred(["keys", "show", "fresh", "--keyring-dir", dir]);
    assert.equal(show.code, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).mnemonic, undefined);
    assert.equal(JSON.parse(show.stdout).address, added.address);
    const noPass = await runFred(
      ["keys", "add", "other", "--keyring-dir", dir, "--keyring-backend", "file"],
      {
        env: { FRED_KEYRING_PASSPHRASE: "" },
      },
    );
    assert.equal(noPass.code, 1);
    assert.match(noPass.stderr, /FRED_KEYRING_PASSPHRASE/);
    assert.equal(noPass.stdout, "");
  });

  it("bad input: os backend, missing key, duplicate name, missing --keyring-dir", async () => {
    const os = await runFred(["keys", "add", "k", "--keyring-dir", dir, "--keyring-backend", "os"]);
    assert.equal(os.code, 1);
    assert.match(os.stderr, /"os" is not supported/);
    const missing = await runFred([
      "keys",
      "show",
      "nobody",
      "--keyring-dir",
      dir,
      "--keyring-backend",
      "test",
    ]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no key named "nobody"/);
    const dup = await runFred(["keys", "add", "provider", "--keyring-dir", dir, "--keyring-backend", "test"]);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists/);
    const noDir = await runFred(["keys", "list"]);
    assert.notEqual(noDir.code, 0);
    assert.match(noDir.stderr, /--keyring-dir/);
    const help = await runFred(["keys", "add", "--help"]);
    assert.match(help.stdout, /Examples:/);
  });
});
