import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Keyring } from "../../../src/chain/keyring/index.ts";
import { runFred } from "../../support/index.ts";
import { Stack } from "./stack.ts";

/**
 * providerd's own chain wiring with an encrypted keyring: the signing key is unlocked with
 * FRED_KEYRING_PASSPHRASE (a wrong one stops startup), the configured event feed delivers
 * lease_created, and the unlocked key acknowledges the lease on chain.
 */
const PASSPHRASE = "a long enough e2e passphrase";
const stack = new Stack();

before(async () => {
  await stack.start(undefined, (s) => {
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

describe("providerd with a file keyring", () => {
  it("refuses to start with a wrong passphrase", async () => {
    const r = await runFred(["providerd", "-c", stack.configPath], {
      env: { FRED_KEYRING_PASSPHRASE: "not the right passphrase at all", FRED_LOG_LEVEL: "warn" },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /wrong passphrase or corrupted key file/);
  });

  it("unlocks the key, hears lease_created on its feed and acknowledges the lease", async () => {
    await stack.startProviderd({ FRED_KEYRING_PASSPHRASE: PASSPHRASE });
    const [lease] = await stack.createLeases(1, "billing-only");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
  });
});
