import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Devnet, devnet, runFred } from "../../support/index.ts";

describe("fred chain (CLI) against a real devnet", () => {
  let dn: Devnet;
  let from: string[];
  before(async () => {
    dn = await devnet({ blockTime: "200ms", tenants: 1 });
    from = ["--home", dn.home, "--rpc", dn.rpc];
  });
  after(async () => {
    await dn?.stop();
  });

  const fred = (...args: string[]) => runFred(args);

  it("credit fund → lease create (names, quantity, service, manifest) → show → leases → cancel", async () => {
    const tenant = dn.account("tenant1");
    const fund = await fred(
      "chain",
      "credit",
      "fund",
      "--tenant",
      tenant.address,
      "--amount",
      "2500000umfx",
      "--from",
      "faucet",
      ...from,
    );
    assert.equal(fund.code, 0, fund.stderr);
    const funded = JSON.parse(fund.stdout);
    assert.equal(funded.tenant, tenant.address);
    assert.equal(funded.new_balance.denom, "umfx");
    assert.equal(funded.new_balance.amount, "2500000");
    assert.match(fund.stderr, /waiting for inclusion/);

    const manifest = join(dn.home, "manifest.json");
    await writeFile(manifest, '{"image":"nginx:1.27"}\n');
    const create = await fred(
      "chain",
      "lease",
      "create",
      "--sku",
      "docker-small:1:web",
      "--sku",
      `${dn.keys.skus[1]?.uuid}:2:db`,
      "--manifest",
      manifest,
      "--mnemonic",
      tenant.mnemonic,
      "--rpc",
      dn.rpc,
    );
    assert.equal(create.code, 0, create.stderr);
    const created = JSON.parse(create.stdout);
    assert.deepEqual(Object.keys(created), ["lease_uuid", "tx_hash", "height"]);

    const show = await fred("chain", "lease", "show", created.lease_uuid, "--rpc", dn.rpc);
    assert.equal(show.code, 0, show.stderr);
    const lease = JSON.parse(show.stdout);
    assert.equal(lease.uuid, created.lease_uuid);
    assert.equal(lease.tenant, tenant.address);
    assert.equal(lease.provider_uuid, dn.keys.provider_uuid);
    assert.equal(lease.state, "LEASE_STATE_PENDING");
    assert.equal(lease.meta_hash, createHash("sha256").update('{"image":"nginx:1.27"}\n').digest("hex"));
    assert.deepEqual(
      lease.items.map((i: Record<string, unknown>) => [i.sku_uuid, i.quantity, i.service_name]),
      [
        [dn.keys.skus[0]?.uuid, 1, "web"],
        [dn.keys.skus[1]?.uuid, 2, "db"],
      ],
    );
    assert.deepEqual(lease.items[0].locked_price, { denom: "upwr", amount: "100" });
    assert.ok(!Number.isNaN(Date.parse(lease.created_at)) && lease.created_at.endsWith("Z"));

    const list = await fred(
      "chain",
      "leases",
      "--provider",
      dn.keys.provider_uuid,
      "--state",
      "pending",
      "--rpc",
      dn.rpc,
    );
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(
      JSON.parse(list.stdout).map((l: { uuid: string }) => l.uuid),
      [created.lease_uuid],
    );

    const cancel = await fred(
      "chain",
      "lease",
      "cancel",
      created.lease_uuid,
      "--key-hex",
      tenant.private_key_hex,
      "--rpc",
      dn.rpc,
    );
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.equal(JSON.parse(cancel.stdout).status, "cancelled");
    const after = JSON.parse(
      (await fred("chain", "lease", "show", created.lease_uuid, "--rpc", dn.rpc)).stdout,
    );
    assert.equal(after.state, "LEASE_STATE_REJECTED");
    assert.equal(after.rejection_reason, "cancelled by tenant");
  });

  it("close: an ACTIVE lease closes with its reason; a PENDING one fails with exit 1", async () => {
    const create = await fred(
      "chain",
      "lease",
      "create",
      "--sku",
      "docker-small",
      "--from",
      "tenant1",
      ...from,
    );
    const { lease_uuid } = JSON.parse(create.stdout);
    const early = await fred("chain", "lease", "close", lease_uuid, "--from", "tenant1", ...from);
    assert.equal(early.code, 1);
    assert.equal(JSON.parse(early.stdout).status, "failed");
    assert.match(JSON.parse(early.stdout).error, /LEASE_STATE_PENDING/);
    // The provider acknowledges (through the same client library), then the tenant closes.
    const { openCosmosChain } = await import("../../../src/chain/cosmos/adapter.ts");
    const { signerFromKey } = await import("../../../src/chain/cosmos/signer.ts");
    const p = await openCosmosChain({
      rpcUrl: dn.rpc,
      signer: signerFromKey(Buffer.from(dn.account("provider").private_key_hex, "hex")),
      txPollIntervalMs: 50,
    });
    assert.equal((await p.acknowledge([lease_uuid]))[0]?.status, "acknowledged");
    p.disconnect();
    const close = await fred(
      "chain",
      "lease",
      "close",
      lease_uuid,
      "--reason",
      "done with it",
      "--from",
      "tenant1",
      ...from,
    );
    assert.equal(close.code, 0, close.stderr);
    assert.equal(JSON.parse(close.stdout).status, "closed");
    const shown = JSON.parse((await fred("chain", "lease", "show", lease_uuid, "--rpc", dn.rpc)).stdout);
    assert.equal(shown.state, "LEASE_STATE_CLOSED");
    assert.equal(shown.closure_reason, "done with it");
  });

  it("lease set-domain: sets an item's custom domain, refuses a claimed one, clears it", async () => {
    const create = await fred(
      "chain",
      "lease",
      "create",
      "--sku",
      "docker-small:1:web",
      "--from",
      "tenant1",
      ...from,
    );
    assert.equal(create.code, 0, create.stderr);
    const { lease_uuid } = JSON.parse(create.stdout);
    const domain = `shop-${lease_uuid.slice(0, 8)}.example.org`;
    const shownDomain = async () =>
      JSON.parse((await fred("chain", "lease", "show", lease_uuid, "--rpc", dn.rpc)).stdout).items[0]
        .custom_domain;
    const set = await fred(
      "chain",
      "lease",
      "set-domain",
      lease_uuid,
      "--service",
      "web",
      "--domain",
      domain,
      "--from",
      "tenant1",
      ...from,
    );
    assert.equal(set.code, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout).custom_domain, domain);
    assert.equal(await shownDomain(), domain);
    // Another lease cannot claim it.
    const other = JSON.parse(
      (await fred("chain", "lease", "create", "--sku", "docker-small:1:web", "--from", "tenant1", ...from))
        .stdout,
    ).lease_uuid;
    const taken = await fred(
      "chain",
      "lease",
      "set-domain",
      other,
      "--service",
      "web",
      "--domain",
      domain,
      "--from",
      "tenant1",
      ...from,
    );
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr + taken.stdout, /claimed/);
    const cleared = await fred(
      "chain",
      "lease",
      "set-domain",
      lease_uuid,
      "--service",
      "web",
      "--clear",
      "--from",
      "tenant1",
      ...from,
    );
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal(await shownDomain(), undefined);
    for (const args of [["--domain", "Bad.Example.org"], ["--domain", domain, "--clear"], []]) {
      const bad = await fred(
        "chain",
        "lease",
        "set-domain",
        lease_uuid,
        "--service",
        "web",
        ...args,
        "--from",
        "tenant1",
        ...from,
      );
      assert.notEqual(bad.code, 0, args.join(" "));
      assert.match(bad.stderr, /--domain|--clear/);
    }
  });

  it("sku list (active, --provider, --all) and provider show", async () => {
    const list = await fred("chain", "sku", "list", "--rpc", dn.rpc);
    assert.equal(list.code, 0, list.stderr);
    const skus = JSON.parse(list.stdout) as Record<string, unknown>[];
    assert.deepEqual(skus.map((s) => s.uuid).sort(), dn.keys.skus.map((s) => s.uuid).sort());
    const small = skus.find((s) => s.name === "docker-small");
    assert.ok(small, "docker-small is listed");
    assert.equal(small.provider_uuid, dn.keys.provider_uuid);
    assert.equal(small.active, true);
    assert.match(String(small.unit), /^per_(hour|day)$/);
    assert.match((small.base_price as { amount: string }).amount, /^[0-9]+$/);
    // The table is for people, on stderr: a header and one row per SKU.
    assert.match(list.stderr, /^UUID +NAME +PRICE +UNIT +ACTIVE +PROVIDER$/m);
    assert.match(
      list.stderr,
      new RegExp(`^${small.uuid} +docker-small +[0-9]+\\S+ +per_\\w+ +yes +${dn.keys.provider_uuid}$`, "m"),
    );

    const mine = await fred(
      "chain",
      "sku",
      "list",
      "--provider",
      dn.keys.provider_uuid,
      "--all",
      "--rpc",
      dn.rpc,
    );
    assert.equal(mine.code, 0, mine.stderr);
    assert.equal(JSON.parse(mine.stdout).length, skus.length);
    const nobody = await fred(
      "chain",
      "sku",
      "list",
      "--provider",
      "01a22a2c-bb6b-7001-8d68-000000000000",
      "--rpc",
      dn.rpc,
    );
    assert.equal(nobody.code, 0, nobody.stderr);
    assert.deepEqual(JSON.parse(nobody.stdout), []);

    const show = await fred("chain", "provider", "show", dn.keys.provider_uuid, "--rpc", dn.rpc);
    assert.equal(show.code, 0, show.stderr);
    const provider = JSON.parse(show.stdout);
    assert.equal(provider.uuid, dn.keys.provider_uuid);
    assert.equal(provider.address, dn.account("provider").address);
    assert.equal(provider.active, true);
    assert.equal(typeof provider.api_url, "string");
    assert.equal(typeof provider.payout_address, "string");

    const absent = await fred(
      "chain",
      "provider",
      "show",
      "01a22a2c-bb6b-7001-8d68-000000000000",
      "--rpc",
      dn.rpc,
    );
    assert.equal(absent.code, 1);
    assert.match(JSON.parse(absent.stdout).error, /provider .* not found/);
  });

  it("bad input: refused with a clear message and nothing sent", async () => {
    // Pure argument rules are unit-tested (test/chain/cli-args.test.ts); these need the process.
    const cases: [string[], RegExp][] = [
      [["chain", "lease", "show", "NOT-A-UUID", "--rpc", dn.rpc], /canonical lowercase UUID/],
      [
        ["chain", "provider", "show", "NOT-A-UUID", "--rpc", dn.rpc],
        /provider UUID must be a canonical lowercase UUID/,
      ],
      [
        ["chain", "sku", "list", "--provider", "docker", "--rpc", dn.rpc],
        /--provider must be a canonical lowercase UUID/,
      ],
      [["chain", "sku", "list", "--rpc", "http://127.0.0.1:1"], /cannot reach the chain/],
      [["chain", "lease", "create", "--sku", "docker-small", "--rpc", dn.rpc], /exactly one key/],
      [
        ["chain", "lease", "create", "--sku", "no-such-sku", "--from", "tenant1", ...from],
        /no active SKU named/,
      ],
      [
        ["chain", "leases", "--provider", dn.keys.provider_uuid, "--rpc", "http://127.0.0.1:1"],
        /cannot reach the chain/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await runFred(args);
      assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(" "));
      assert.equal(r.stdout, "", args.join(" "));
    }
    const missing = await fred(
      "chain",
      "lease",
      "show",
      "01a22a2c-bb6b-7001-8d68-000000000000",
      "--rpc",
      dn.rpc,
    );
    assert.equal(missing.code, 1);
    assert.match(JSON.parse(missing.stdout).error, /not found/);
  });
});
