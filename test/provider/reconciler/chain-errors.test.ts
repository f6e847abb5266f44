import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ChainLease, ChainPort, LeaseStateName } from "../../../src/chain/port.ts";
import { buildCallbackUrl } from "../../../src/core/backend-contract/index.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { type BackendClient, createBackendClients } from "../../../src/provider/backend-client/index.ts";
import { type ProviderConfig, parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Lifecycle } from "../../../src/provider/lifecycle/index.ts";
import { Reconciler } from "../../../src/provider/reconciler/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type MockProcess, spawnMock } from "../../backend/mock/process.ts";
import { until } from "../../support/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain, type SentTx } from "../lifecycle/deps.ts";

/**
 * A sweep whose chain node errs destroys nothing. A real mock backend runs a workload of a
 * lease that providerd has a confirmed placement for; the chain (the only fake, at the
 * process boundary) fails the listings, then lists nothing while its exact re-read fails,
 * returns not found or an unknown state. The workload, its placement and the payload-free
 * store stay untouched each time; only a re-read that says CLOSED lets the orphan pass act.
 */
const SECRET = "reconciler-chain-errors-0123456789abcdef";
const SID = "5e6f7a8b-9cad-4ebf-8c0d-1e2f3a4b5c6d";
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000e01";
const dir = mkdtempSync(join(tmpdir(), "fred-reconciler-chain-"));
const never = new AbortController().signal;

let mock: MockProcess;
let config: ProviderConfig;
let clients: Map<string, BackendClient>;

before(async () => {
  mock = await spawnMock({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SID,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_NAME: "one",
  });
  const c = baseConfig();
  c.backends = [{ name: "one", url: mock.ready.url, hmac_secret: SECRET, default: true }];
  config = parseProviderConfig(yamlOf(c));
  clients = await createBackendClients(config, new Map([["one", SID]]), systemClock);
});

after(async () => {
  for (const c of clients?.values() ?? []) await c.close();
  await mock?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function lease(state: string, uuid = LEASE): ChainLease {
  return {
    uuid,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state: state as LeaseStateName,
    items: [{ skuUuid: SKU, quantity: 1n, serviceName: "", customDomain: "", lockedPrice: undefined }],
    metaHash: "",
  } as ChainLease;
}

async function onMock(): Promise<string | undefined> {
  return (await clients.get("one")!.provisionsFor([LEASE]))[0]?.status;
}

/** A reconciler over `chain`, the store and the mock backend ("one"). */
function reconcilerOver(chain: ChainPort, store: PlacementStore, clock: ManualClock) {
  const deps = lifecycleDeps({ config, chain, store, clock, clients });
  const reconciler = new Reconciler({
    ...deps,
    lifecycle: new Lifecycle(deps),
    feedLive: async () => {},
    clock,
    logger: deps.logger,
  });
  return { deps, reconciler };
}

describe("a sweep while the chain node errs", () => {
  it("destroys nothing unless an exact re-read says the lease ended", async () => {
    const clock = new ManualClock(Date.now());
    const store = PlacementStore.create(
      join(dir, "placements.db"),
      PROVIDER_UUID,
      [{ name: "one", storageId: SID, baseline: { provisions: 0, retentions: 0 } }],
      clock.now(),
    );
    // What the chain node does now: how it answers listings and the exact re-read.
    let listings: () => Promise<ChainLease[]> = async () => {
      throw new FredError("ERR_CHAIN_QUERY", "node unavailable", { retryable: true });
    };
    let reread: () => Promise<ChainLease | undefined> = async () => {
      throw new FredError("ERR_CHAIN_QUERY", "node unavailable", { retryable: true });
    };
    const txs: SentTx[] = [];
    const chain = recordingChain(txs, {
      getLease: () => reread(),
      leasesByProvider: () => listings(),
    });
    const { deps, reconciler } = reconcilerOver(chain, store, clock);
    try {
      // The lease's workload runs on "one", confirmed by its operation.
      const op = newUuidV4();
      store.placements.recordAttempt({
        leaseUuid: LEASE,
        backend: "one",
        operationId: op,
        kind: "provision",
        createdAt: clock.now(),
      });
      const sent = await clients.get("one")!.provision({
        leaseUuid: LEASE,
        tenant: "manifest1tenant",
        providerUuid: PROVIDER_UUID,
        items: [{ sku: SKU, quantity: 1 }],
        callbackUrl: buildCallbackUrl(config.callbackBase, "operation_id", op),
        lifecycleCallbackUrl: buildCallbackUrl(config.callbackBase, "lifecycle_id", op),
      });
      assert.equal(sent.kind, "accepted");
      await until(async () => (await onMock()) === "ready", "the workload ready", { intervalMs: 50 });
      store.placements.settleOperation(LEASE, op, "success", clock.now());
      const before = store.placements.placement(LEASE);
      assert.equal(before?.owner, "one");

      const intact = async (what: string) => {
        await deps.queue.idle();
        assert.equal(await onMock(), "ready", `${what}: the workload runs`);
        assert.deepEqual(store.placements.placement(LEASE), before, `${what}: the placement is kept`);
        assert.equal(txs.length, 0, `${what}: no lease tx`);
      };

      const failed = await reconciler.sweep(never);
      assert.equal(failed.outcome, "failed", "listings that fail end the sweep");
      await intact("listings fail");

      // The lease is missing from the listings: an orphan candidate, gated by the re-read.
      listings = async () => [];
      for (const [what, answer] of [
        ["re-read fails", reread],
        ["re-read not found", async () => undefined],
        ["re-read UNSPECIFIED", async () => lease("LEASE_STATE_UNSPECIFIED")],
        ["re-read an unknown state", async () => lease("7")],
        ["re-read ACTIVE", async () => lease("LEASE_STATE_ACTIVE")],
      ] as const) {
        reread = answer;
        const report = await reconciler.sweep(never);
        assert.equal(report.outcome, "complete", what);
        await intact(what);
      }
      const skipped = await reconciler.metrics.skips.get();
      const reasons = new Set(
        skipped.values.filter((v) => v.labels.pass === "orphan").map((v) => v.labels.reason),
      );
      for (const r of ["reread_failed", "reread_not_found", "reread_unknown_state", "reread_live"])
        assert.ok(reasons.has(r), `cleanup skip counted: ${r}`);

      // Control: a re-read that proves the end lets the orphan pass tear it down.
      reread = async () => lease("LEASE_STATE_CLOSED");
      await reconciler.sweep(never);
      await deps.queue.idle();
      await until(async () => (await onMock()) === undefined, "the ended lease's workload removed", {
        intervalMs: 50,
      });
    } finally {
      store.close();
    }
  });
  it("provisions an ACTIVE lease its owner lost only once the exact re-read says it is ACTIVE", async () => {
    // The sweep keeps only a plan view of an ACTIVE lease: the act phase re-reads it in full.
    const LOST = "0190f3a2-7c1e-7000-8000-000000000e02";
    const clock = new ManualClock(Date.now());
    const store = PlacementStore.create(
      join(dir, "placements-lost.db"),
      PROVIDER_UUID,
      [{ name: "one", storageId: SID, baseline: { provisions: 0, retentions: 0 } }],
      clock.now(),
    );
    let reread: () => Promise<ChainLease | undefined> = async () => {
      throw new FredError("ERR_CHAIN_QUERY", "node unavailable", { retryable: true });
    };
    const chain = recordingChain([], {
      getLease: () => reread(),
      leasesByProvider: async () => [lease("LEASE_STATE_ACTIVE", LOST)],
    });
    const { deps, reconciler } = reconcilerOver(chain, store, clock);
    try {
      store.placements.adoptPlacement(LOST, "one", clock.now());
      for (const [what, answer] of [
        ["re-read fails", reread],
        ["re-read not found", async () => undefined],
        ["re-read CLOSED", async () => lease("LEASE_STATE_CLOSED", LOST)],
      ] as const) {
        reread = answer;
        assert.equal((await reconciler.sweep(never)).outcome, "complete", what);
        await deps.queue.idle();
        assert.equal(store.placements.attemptFor(LOST), undefined, `${what}: no provision attempt`);
        assert.deepEqual(await clients.get("one")!.provisionsFor([LOST]), [], `${what}: nothing sent`);
      }
      reread = async () => lease("LEASE_STATE_ACTIVE", LOST);
      await reconciler.sweep(never);
      await deps.queue.idle();
      assert.equal(
        store.placements.attemptFor(LOST)?.backend,
        "one",
        "re-read ACTIVE: provisioned on its owner",
      );
      await until(async () => (await clients.get("one")!.provisionsFor([LOST])).length === 1, "sent", {
        intervalMs: 50,
      });
    } finally {
      await clients.get("one")!.deprovision(LOST);
      store.close();
    }
  });
});
