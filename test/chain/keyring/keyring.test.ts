import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { addressFromPubkey } from "../../../src/auth/address.ts";
import { compressedPubkey, privateKeyFromMnemonic } from "../../../src/auth/keys.ts";
import { Keyring } from "../../../src/chain/keyring/index.ts";
import { type ErrorCode, isFredError } from "../../../src/core/errors.ts";

// A fixed BIP-39 test mnemonic (the standard "abandon … about" vector).
const MNEMONIC =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
const FAST = { n: 1024, r: 8, p: 1 };

function code(c: ErrorCode) {
  return (err: unknown) => isFredError(err, c);
}

describe("keyring", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "fred-keyring-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("test backend: recovers a mnemonic to the cosmos address and stores a 0600 file", async () => {
    const ring = new Keyring({ dir, backend: "test" });
    const added = await ring.add("alice", MNEMONIC);
    const expected = addressFromPubkey(compressedPubkey(privateKeyFromMnemonic(MNEMONIC)));
    assert.equal(added.info.address, expected);
    assert.equal(added.generated, false);
    const st = await stat(join(dir, "keyring-test", "alice.json"));
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal((await stat(join(dir, "keyring-test"))).mode & 0o777, 0o700);
    const shown = await ring.show("alice");
    assert.equal(shown.address, expected);
    const unlocked = await ring.unlock("alice");
    assert.deepEqual(Buffer.from(unlocked.privateKey), Buffer.from(privateKeyFromMnemonic(MNEMONIC)));
    assert.equal(unlocked.mnemonic, MNEMONIC);
  });

  it("generates a fresh 24-word mnemonic when none is given", async () => {
    const ring = new Keyring({ dir, backend: "test" });
    const added = await ring.add("generated");
    assert.equal(added.generated, true);
    assert.equal(added.mnemonic.split(" ").length, 24);
    assert.equal(
      added.info.address,
      addressFromPubkey(compressedPubkey(privateKeyFromMnemonic(added.mnemonic))),
    );
  });

  it("refuses to overwrite an existing key and leaves it unchanged", async () => {
    const ring = new Keyring({ dir, backend: "test" });
    const before = await readFile(join(dir, "keyring-test", "alice.json"), "utf8");
    await assert.rejects(ring.add("alice"), code("ERR_KEY_EXISTS"));
    assert.equal(await readFile(join(dir, "keyring-test", "alice.json"), "utf8"), before);
    const leftovers = (await readdir(join(dir, "keyring-test"))).filter((n) => n.endsWith(".tmp"));
    assert.deepEqual(leftovers, []);
  });

  it("file backend: encrypted at rest, needs the passphrase, detects a wrong one", async () => {
    const ring = new Keyring({ dir, backend: "file", passphrase: "correct horse", scrypt: FAST });
    const added = await ring.add("bob", MNEMONIC);
    const raw = await readFile(join(dir, "keyring-file", "bob.json"), "utf8");
    const hex = Buffer.from(privateKeyFromMnemonic(MNEMONIC)).toString("hex");
    assert.ok(!raw.includes(hex), "private key must not be stored in clear");
    assert.ok(!raw.includes("abandon"), "mnemonic must not be stored in clear");
    assert.equal(JSON.parse(raw).kdf.name, "scrypt");
    assert.equal((await ring.unlock("bob")).address, added.info.address);
    // show/list need no passphrase: only public data is read.
    assert.equal((await new Keyring({ dir, backend: "file" }).show("bob")).address, added.info.address);
    const wrong = new Keyring({ dir, backend: "file", passphrase: "wrong horse" });
    await assert.rejects(wrong.unlock("bob"), code("ERR_KEYRING_PASSPHRASE"));
    await assert.rejects(new Keyring({ dir, backend: "file" }).unlock("bob"), code("ERR_KEYRING_PASSPHRASE"));
  });

  it("file backend: a tampered header (address swapped) fails to decrypt", async () => {
    const ring = new Keyring({ dir, backend: "file", passphrase: "correct horse", scrypt: FAST });
    await ring.add("carol", MNEMONIC);
    const path = join(dir, "keyring-file", "carol.json");
    const file = JSON.parse(await readFile(path, "utf8"));
    file.address = "manifest1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc57qwfj5";
    await writeFile(path, JSON.stringify(file));
    await assert.rejects(ring.unlock("carol"), code("ERR_KEYRING_PASSPHRASE"));
  });

  it("test backend: a key file whose address does not match its key is refused", async () => {
    const ring = new Keyring({ dir, backend: "test" });
    await ring.add("dave", MNEMONIC);
    const path = join(dir, "keyring-test", "dave.json");
    const file = JSON.parse(await readFile(path, "utf8"));
    file.address = "manifest1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc57qwfj5";
    await writeFile(path, JSON.stringify(file));
    await assert.rejects(ring.unlock("dave"), code("ERR_KEY_FILE"));
    await writeFile(path, "{not json");
    await assert.rejects(ring.show("dave"), code("ERR_KEY_FILE"));
  });

  it("refuses bad input: os backend, unknown backend, bad names, short passphrase, bad mnemonic", async () => {
    assert.throws(() => new Keyring({ dir, backend: "os" }), /not supported/);
    assert.throws(() => new Keyring({ dir, backend: "kwallet" }), code("ERR_KEYRING_BACKEND"));
    const ring = new Keyring({ dir, backend: "test" });
    for (const bad of ["", "../escape", "a/b", ".hidden", "x".repeat(65)]) {
      await assert.rejects(ring.add(bad, MNEMONIC), code("ERR_KEY_NAME"));
    }
    await assert.rejects(ring.show("missing"), code("ERR_KEY_NOT_FOUND"));
    await assert.rejects(ring.add("m", "not a valid mnemonic at all"), code("ERR_MNEMONIC"));
    const short = new Keyring({ dir, backend: "file", passphrase: "short", scrypt: FAST });
    await assert.rejects(short.add("s", MNEMONIC), code("ERR_KEYRING_PASSPHRASE"));
    await assert.rejects(
      new Keyring({ dir, backend: "file" }).add("s", MNEMONIC),
      code("ERR_KEYRING_PASSPHRASE"),
    );
    await assert.rejects(stat(join(dir, "keyring-file", "s.json")));
  });

  it("lists keys sorted by name and per backend", async () => {
    const listDir = await mkdtemp(join(tmpdir(), "fred-keyring-list-"));
    try {
      const ring = new Keyring({ dir: listDir, backend: "test" });
      assert.deepEqual(await ring.list(), []);
      await ring.add("zed", MNEMONIC);
      await ring.add("amy");
      assert.deepEqual(
        (await ring.list()).map((k) => k.name),
        ["amy", "zed"],
      );
      assert.deepEqual(await new Keyring({ dir: listDir, backend: "file" }).list(), []);
    } finally {
      await rm(listDir, { recursive: true, force: true });
    }
  });
});
