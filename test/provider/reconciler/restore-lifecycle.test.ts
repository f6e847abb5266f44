import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ChainLease, LeaseStateName } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Lifecycle } from "../../../src/provider/lifecycle/index.ts";
import { Reconciler } from "../../../src/provider/reconciler/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { backendConfigFor } from "../backend-client/backend-config.ts";
import { type FakeBackend, type Scripted, startFakeBackend } from "../backend-client/fake-backend.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain } from "../lifecycle/deps.ts";

/**
 * The sweep gives an ACTIVE lease's placement without a lifecycle id the id its owner's own
 * record names (GET provisions/{uuid}: ready, a typed lifecycle_generation), and nothing
 * else: the owner is a real HTTP server that answers each sweep's read as scripted.
 */
const SECRET = "reconciler-restore-lifecycle-0123456789";
const SID = "5e6f7a8b-9cad-4ebf-8c0d-1e2f3a4b5c6d";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000f01";
const OP = "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";
const never = new AbortController().signal;
const dir = mkdtempSync(join(tmpdir(), "fred-restore-lifecycle-"));

let fake: FakeBackend;
let client: BackendClient;

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
  fake.provisions = [LEASE];
  client = await BackendClient.create({
    backend: backendConfigFor(fake.url, SECRET, { name: "one" }),
    secret: SECRET,
    storageId: SID,
  });
});

after(async () => {
  await client.close();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function active(): ChainLease {
  return {
    uuid: LEASE,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state: "LEASE_STATE_ACTIVE" as LeaseStateName,
    items: [],
    metaHash: "",
  } as unknown as ChainLease;
}

let n = 0;

/** One sweep over an adopted placement (no lifecycle id), the owner answering `record`. */
async function sweepWith(record: Scripted): Promise<string | undefined> {
  const clock = new ManualClock(Date.now());
  const c = baseConfig();
  c.backends = [{ name: "one", url: fake.url, hmac_secret: SECRET, default: true }];
  const config = parseProviderConfig(yamlOf(c));
  using store = PlacementStore.create(
    join(dir, `p${++n}.db`),
    PROVIDER_UUID,
    [{ name: "one", storageId: SID, baseline: { provisions: 1, retentions: 0 } }],
    clock.now(),
  );
  store.placements.adoptPlacement(LEASE, "one", clock.now());
  const chain = recordingChain([], {
    getLease: async () => active(),
    leasesByProvider: async (_p, state) => (state === "LEASE_STATE_ACTIVE" ? [active()] : []),
  });
  const deps = lifecycleDeps({ config, chain, store, clock, clients: new Map([["one", client]]) });
  const reconciler = new Reconciler({
    ...deps,
    lifecycle: new Lifecycle(deps),
    feedLive: async () => {},
    clock,
    logger: deps.logger,
  });
  fake.script.set("provision-info", [record]);
  await reconciler.sweep(never);
  await deps.queue.idle();
  return store.placements.placement(LEASE)?.lifecycleId;
}

const typed = (id: unknown, status = "ready") => ({
  status: 200,
  body: { lease_uuid: LEASE, status, lifecycle_generation: { kind: "typed", id } },
});

describe("the sweep restores a missing lifecycle id from the owner's record", () => {
  it("ready with a typed generation: the id is restored", async () => {
    assert.equal(await sweepWith(typed(OP)), OP);
  });

  const bad: [string, Scripted][] = [
    ["restarting", typed(OP, "restarting")],
    [
      "a legacy generation",
      { status: 200, body: { lease_uuid: LEASE, status: "ready", lifecycle_generation: { kind: "legacy" } } },
    ],
    ["no generation", { status: 200, body: { lease_uuid: LEASE, status: "ready" } }],
    ["a typed id that is not a UUIDv4", typed("not-a-uuid")],
    ["an uppercase id", typed(OP.toUpperCase())],
    ["a typed id of the wrong type", typed(42)],
    ["an unreadable body", { status: 200, body: "<html>nope" }],
    ["a 404", { status: 404, body: { error: "not found" } }],
    ["a 500", { status: 500, body: { error: "boom" } }],
  ];
  for (const [what, record] of bad) {
    it(`bad input: ${what} changes nothing`, async () => {
      assert.equal(await sweepWith(record), undefined);
    });
  }
});
