/**
 * `fred chain … --sign-mode amino-json` against a real devnet: the same commands signed the
 * way Keplr and Ledger sign (SIGN_MODE_LEGACY_AMINO_JSON), including a lease with no
 * manifest (empty meta_hash); each committed tx carries signer mode 127, and the default
 * stays SIGN_MODE_DIRECT. A bad --sign-mode is refused before anything is sent.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { SignMode } from "cosmjs-types/cosmos/tx/signing/v1beta1/signing";
import { AuthInfo, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import { type Devnet, devnet, runFred } from "../../support/index.ts";

describe("fred chain --sign-mode amino-json against a real devnet", () => {
  let dn: Devnet;
  before(async () => {
    dn = await devnet({ blockTime: "200ms", tenants: 1 });
  });
  after(async () => {
    await dn?.stop();
  });

  const fred = (...args: string[]) => runFred(["chain", ...args, "--rpc", dn.rpc]);

  async function signModeOf(txHash: string): Promise<number | undefined> {
    const found = (await dn.call("tx", { hash: Buffer.from(txHash, "hex").toString("base64") })) as {
      tx: string;
      tx_result: { code: number };
    };
    assert.equal(found.tx_result.code, 0);
    const raw = TxRaw.decode(Buffer.from(found.tx, "base64"));
    return AuthInfo.decode(raw.authInfoBytes).signerInfos[0]?.modeInfo?.single?.mode;
  }

  it("funds and creates a lease with no manifest, amino-signed; the default stays direct", async () => {
    const tenant = dn.account("tenant1");
    const amino = ["--sign-mode", "amino-json"];
    const fund = await fred(
      "credit",
      "fund",
      "--tenant",
      tenant.address,
      "--amount",
      "2500000umfx",
      "--from",
      "faucet",
      "--home",
      dn.home,
      ...amino,
    );
    assert.equal(fund.code, 0, fund.stderr);
    assert.equal(await signModeOf(JSON.parse(fund.stdout).tx_hash), SignMode.SIGN_MODE_LEGACY_AMINO_JSON);

    const create = await fred(
      "lease",
      "create",
      "--sku",
      "docker-small",
      "--key-hex",
      tenant.private_key_hex,
      ...amino,
    );
    assert.equal(create.code, 0, create.stderr);
    const created = JSON.parse(create.stdout);
    assert.equal(await signModeOf(created.tx_hash), SignMode.SIGN_MODE_LEGACY_AMINO_JSON);
    const show = JSON.parse((await fred("lease", "show", created.lease_uuid)).stdout);
    assert.equal(show.meta_hash, "", "no manifest: empty meta_hash");

    // The default stays SIGN_MODE_DIRECT.
    const cancel = await fred("lease", "cancel", created.lease_uuid, "--key-hex", tenant.private_key_hex);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.equal(await signModeOf(JSON.parse(cancel.stdout).tx_hash), SignMode.SIGN_MODE_DIRECT);
  });

  it("refuses an unknown sign mode with a usage error and sends nothing", async () => {
    const tenant = dn.account("tenant1");
    const r = await fred(
      "lease",
      "create",
      "--sku",
      "docker-small",
      "--key-hex",
      tenant.private_key_hex,
      "--sign-mode",
      "textual",
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /--sign-mode must be direct or amino-json, got "textual"/);
    const leases = JSON.parse(
      (await fred("leases", "--provider", dn.keys.provider_uuid, "--state", "pending")).stdout,
    ) as unknown[];
    assert.deepEqual(leases, [], "no lease was created");
  });

  it("refuses a bad --tx-timeout with a usage error and sends nothing", async () => {
    const tenant = dn.account("tenant1");
    for (const bad of ["soon", "0s", "-5s"]) {
      const r = await fred(
        "lease",
        "create",
        "--sku",
        "docker-small",
        "--key-hex",
        tenant.private_key_hex,
        "--tx-timeout",
        bad,
      );
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /--tx-timeout must be a positive duration/);
    }
    const leases = JSON.parse(
      (await fred("leases", "--provider", dn.keys.provider_uuid, "--state", "pending")).stdout,
    ) as unknown[];
    assert.deepEqual(leases, [], "no lease was created");
  });
});
