import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import { ManualClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { CometRpcChainHistory } from "../../../src/provider/placement/chain-history.ts";
import { initPlacementStore, inventoryTransportProblem } from "../../../src/provider/placement/init.ts";
import { type Devnet, devnet, type Launched, launchFred, runFred } from "../../support/index.ts";

/**
 * `fred placement init|inspect` against a real devnet and real mock backends, plus the
 * backend client against a real `fred backend mock` process.
 */
const SECRETS = ["mock-one-secret-0123456789abcdef0123", "mock-two-secret-0123456789abcdef0123"];
const SIDS = ["6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f", "7a2d3b5f-9c4e-4d6f-8a71-8b9cad0e1f30"];
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const OP = "11111111-1111-4111-8111-111111111111";
const OP_2 = "33333333-3333-4333-8333-333333333333";

interface MockReady {
  url: string;
  storage_id: string;
}

const dir = mkdtempSync(join(tmpdir(), "fred-placement-init-"));
const started: { stop(): Promise<unknown> }[] = [];
let chain: Devnet;
let mocks: Launched<MockReady>[];
let providerUuid: string;
let providerAddress: string;

before(async () => {
  const mockEnv = (i: number) => ({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SIDS[i]!,
    MOCK_BACKEND_CALLBACK_SECRET: SECRETS[i]!,
    MOCK_BACKEND_NAME: `mock-${i + 1}`,
  });
  const all = await Promise.all([
    devnet({ readyTimeoutMs: 120_000 }),
    launchFred<MockReady>(["backend", "mock"], { env: mockEnv(0), readyTimeoutMs: 120_000 }),
    launchFred<MockReady>(["backend", "mock"], { env: mockEnv(1), readyTimeoutMs: 120_000 }),
  ]);
  started.push(...all);
  chain = all[0] as Devnet;
  mocks = all.slice(1) as Launched<MockReady>[];
  providerUuid = chain.keys.provider_uuid;
  providerAddress = chain.account("provider").address;
});

after(async () => {
  await Promise.all(started.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
function writeConfig(over: Record<string, unknown> = {}, backends = [0, 1]): string {
  const path = join(dir, `providerd-${++n}.yaml`);
  const config = {
    provider_uuid: providerUuid,
    provider_address: providerAddress,
    keyring_dir: join(dir, "keyring"),
    key_name: "provider",
    websocket_url: `${chain.wsUrl}/websocket`,
    callback_base_url: "http://127.0.0.1:8080",
    placement_store_db_path: join(dir, `state-${n}`, "placements.db"),
    backends: backends.map((i) => ({
      name: `mock-${i + 1}`,
      url: mocks[i]!.ready.url,
      hmac_secret: SECRETS[i],
      default: i === 0,
    })),
    ...over,
  };
  writeFileSync(path, stringify(config));
  return path;
}

describe("fred placement init / inspect (devnet + mock backends)", () => {
  it("creates the store from empty backends, pins storage IDs, and refuses a second init", async () => {
    const cfg = writeConfig();
    const r = await runFred(["placement", "init", "--config", cfg]);
    assert.equal(r.code, 0, r.stderr);
    const summary = JSON.parse(r.stdout) as {
      backends: { name: string; storage_id: string }[];
      provider_uuid: string;
    };
    assert.equal(summary.provider_uuid, providerUuid);
    assert.deepEqual(
      summary.backends.map((b) => [b.name, b.storage_id]),
      [
        ["mock-1", SIDS[0]],
        ["mock-2", SIDS[1]],
      ],
    );
    const inspect = await runFred(["placement", "inspect", "--config", cfg]);
    assert.equal(inspect.code, 0, inspect.stderr);
    const records = JSON.parse(inspect.stdout) as {
      baseline_matches_config: boolean;
      backends: { storage_id: string; baseline: { provisions: number } }[];
      attempts: unknown[];
    };
    assert.equal(records.baseline_matches_config, true);
    assert.deepEqual(
      records.backends.map((b) => [b.storage_id, b.baseline.provisions]),
      [
        [SIDS[0], 0],
        [SIDS[1], 0],
      ],
    );
    assert.deepEqual(records.attempts, []);
    const again = await runFred(["placement", "init", "--config", cfg]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists; init never replaces one/);
  });

  it("inspect refuses a store that does not exist", async () => {
    const r = await runFred(["placement", "inspect", "--config", writeConfig()]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /does not exist/);
  });

  it("refuses when the chain cannot be asked, creating nothing", async () => {
    const cfg = writeConfig({ rpc_url: "http://127.0.0.1:1" });
    const r = await runFred(["placement", "init", "--config", cfg]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /chain RPC http:\/\/127\.0\.0\.1:1 did not answer/);
    assert.equal(existsSync(join(dir, `state-${n}`, "placements.db")), false);
  });

  it("refuses when a backend answers with the wrong key (inventory not complete)", async () => {
    const path = writeConfig();
    const text = readFileSync(path, "utf8").replace(SECRETS[1]!, "another-secret-0123456789abcdef0123");
    writeFileSync(path, text);
    const r = await runFred(["placement", "init", "--config", path]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /backend mock-2 did not answer complete inventories/);
  });

  it("the chain history port answers from the devnet: a fresh provider has none", async () => {
    assert.equal(await new CometRpcChainHistory(chain.rpc).hasLeaseHistory(providerUuid), false);
  });

  it("refuses a provider with lease history, and fenced or non-loopback plain-HTTP backends", async () => {
    const config = parseProviderConfig(readFileSync(writeConfig(), "utf8"));
    const deps = { chain: { hasLeaseHistory: async () => true }, clock: new ManualClock() };
    await assert.rejects(initPlacementStore(config, deps), /already has lease history on chain/);
    const fenced = parseProviderConfig(
      readFileSync(writeConfig({}, [0, 1]), "utf8").replace("default: false", "fenced: true"),
    );
    await assert.rejects(initPlacementStore(fenced, deps), /mock-2 are fenced; init refuses to run/);
    const remote = { ...config.backends[0]!, host: "10.0.0.7", url: "http://10.0.0.7:9001" };
    assert.match(
      inventoryTransportProblem(remote) ?? "",
      /plain HTTP is accepted only for loopback backends/,
    );
    assert.match(
      inventoryTransportProblem({ ...remote, scheme: "https", tlsSkipVerify: true }) ?? "",
      /tls_skip_verify cannot vouch/,
    );
    assert.equal(inventoryTransportProblem({ ...remote, scheme: "https" }), undefined);
  });
});

describe("backend client against a real `fred backend mock`", () => {
  it("provisions on the pinned path, reads it back, classifies a duplicate, deprovisions", async () => {
    const backend = parseProviderConfig(readFileSync(writeConfig({}, [1]), "utf8")).backends[0]!;
    const client = await BackendClient.create({ backend, secret: SECRETS[1]!, storageId: SIDS[1] });
    try {
      const request = {
        leaseUuid: LEASE,
        tenant: providerAddress,
        providerUuid,
        items: [{ sku: "0190f3a2-7c1e-7000-8000-00000000000a", quantity: 1 }],
        callbackUrl: `http://127.0.0.1:1/callbacks/provision?operation_id=${OP}`,
        lifecycleCallbackUrl: `http://127.0.0.1:1/callbacks/provision?lifecycle_id=${OP}`,
      };
      const first = await client.provision(request);
      assert.equal(first.kind, "accepted", JSON.stringify(first));
      // The same operation again is idempotent; another operation for the lease is a coded
      // already_provisioned, which proves nothing about which callback the backend kept.
      assert.equal((await client.provision(request)).kind, "accepted");
      const OTHER_OP = "22222222-2222-4222-8222-222222222222";
      const again = await client.provision({
        ...request,
        callbackUrl: `http://127.0.0.1:1/callbacks/provision?operation_id=${OTHER_OP}`,
        lifecycleCallbackUrl: `http://127.0.0.1:1/callbacks/provision?lifecycle_id=${OTHER_OP}`,
      });
      assert.equal(again.kind === "ambiguous" && again.reason, "already-provisioned", JSON.stringify(again));
      const inv = await client.inventory();
      assert.equal(inv.storageId, SIDS[1]);
      assert.deepEqual(
        inv.provisions.map((p) => p.leaseUuid),
        [LEASE],
      );
      const info = await client.provisionInfo(LEASE);
      assert.equal(info?.lease_uuid, LEASE);
      assert.ok(await client.healthy());
      const stats = await client.stats();
      assert.ok(stats.totalCpuCores > 0);
      assert.equal((await client.deprovision(LEASE)).kind, "accepted");
      const bad = await client.provision({ ...request, items: [{ sku: "not-a-uuid", quantity: 1 }] });
      assert.equal(bad.kind, "refused", JSON.stringify(bad));
    } finally {
      await client.close();
    }
    const wrongPin = await BackendClient.create({ backend, secret: SECRETS[1]!, storageId: SIDS[0] });
    try {
      // The backend answers as its real storage, which is not the pin: an identity failure.
      const out = await wrongPin.deprovision(LEASE);
      assert.equal(out.kind === "ambiguous" && out.reason, "identity", JSON.stringify(out));
      await assert.rejects(wrongPin.stats(), (e) => isFredError(e, "ERR_BACKEND_IDENTITY"));
    } finally {
      await wrongPin.close();
    }
  });

  it("init refuses a backend that is not empty, creating nothing", async () => {
    const cfg = writeConfig({}, [1]);
    const backend = parseProviderConfig(readFileSync(cfg, "utf8")).backends[0]!;
    const client = await BackendClient.create({ backend, secret: SECRETS[1]!, storageId: SIDS[1] });
    try {
      const out = await client.provision({
        leaseUuid: "0190f3a2-7c1e-7000-8000-000000000002",
        tenant: providerAddress,
        providerUuid,
        items: [{ sku: "0190f3a2-7c1e-7000-8000-00000000000a", quantity: 1 }],
        // An operation id names one lease only: this lease gets its own.
        callbackUrl: `http://127.0.0.1:1/callbacks/provision?operation_id=${OP_2}`,
        lifecycleCallbackUrl: `http://127.0.0.1:1/callbacks/provision?lifecycle_id=${OP_2}`,
      });
      assert.equal(out.kind, "accepted", JSON.stringify(out));
    } finally {
      await client.close();
    }
    const refused = await runFred(["placement", "init", "--config", cfg]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /backend mock-2 is not empty \(\d+ provision\(s\), \d+ retention\(s\)\)/);
    assert.equal(existsSync(join(dir, `state-${n}`, "placements.db")), false);
  });
});
