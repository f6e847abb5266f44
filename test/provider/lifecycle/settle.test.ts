import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import type { LifecycleDeps, VerifiedCallback } from "../../../src/provider/lifecycle/index.ts";
import { applyCallback, sendChainAction } from "../../../src/provider/lifecycle/settle.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain, type SentTx } from "./deps.ts";

/**
 * Callback application on a real placement store. The chain is the only fake: it
 * records which acknowledgements and rejections reached it.
 */
const dir = mkdtempSync(join(tmpdir(), "fred-settle-"));
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const OP = "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";
const OTHER_OP = "4a3d2c5b-6e7f-4a81-9bac-1d2e3f4a5b6c";
const flush = () => new Promise((r) => setImmediate(r));

let n = 0;
let store: PlacementStore;
let sent: SentTx[];
let deps: LifecycleDeps;

beforeEach(() => {
  const clock = new ManualClock();
  const config = parseProviderConfig(yamlOf(baseConfig()));
  store = PlacementStore.create(
    join(dir, `p-${++n}.db`),
    PROVIDER_UUID,
    [
      {
        name: "one",
        storageId: "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b",
        baseline: { provisions: 0, retentions: 0 },
      },
      {
        name: "two",
        storageId: "6d1f3a2b-4c5e-4f70-9bac-1d2e3f4a5b6c",
        baseline: { provisions: 0, retentions: 0 },
      },
    ],
    clock.now(),
  );
  sent = [];
  const chain = recordingChain(sent);
  deps = lifecycleDeps({ config, chain, store, clock });
  store.placements.recordAttempt({
    leaseUuid: LEASE,
    backend: "one",
    operationId: OP,
    kind: "provision",
    createdAt: clock.now(),
  });
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** Applies like the lifecycle does (minus the disk wait): the change, then its chain tx. */
function apply(c: VerifiedCallback): string {
  const applied = applyCallback(deps, c);
  sendChainAction(deps, c.leaseUuid, applied);
  return applied.result;
}

function cb(over: Partial<VerifiedCallback> = {}): VerifiedCallback {
  return {
    backend: "one",
    leaseUuid: LEASE,
    capability: { kind: "operation", id: OP },
    status: "success",
    error: "",
    ...over,
  };
}

describe("applying verified callbacks", () => {
  it("success for the exact operation confirms the owner and acknowledges; a repeat is stale", async () => {
    assert.equal(apply(cb()), "acknowledging");
    await flush();
    assert.equal(store.placements.placement(LEASE)?.owner, "one");
    assert.equal(store.placements.placement(LEASE)?.lifecycleId, OP, "the operation grants the lifecycle");
    assert.equal(store.placements.attemptFor(LEASE), undefined);
    assert.deepEqual(sent, [{ kind: "acknowledge", uuids: [LEASE] }]);
    assert.equal(apply(cb()), "ignored-stale");
    await flush();
    assert.equal(sent.length, 1);
  });

  it("failed rejects with the backend's text, or the generic phrase when it sent none", async () => {
    assert.equal(apply(cb({ status: "failed", error: "image pull failed" })), "rejecting");
    await flush();
    assert.deepEqual(sent, [{ kind: "reject", uuids: [LEASE], reason: "image pull failed" }]);
    assert.equal(store.placements.attemptFor(LEASE), undefined);
    // The backend keeps the failed record: the lease stays placed there, so no sweep takes
    // it for new work on another backend; the failed operation grants no lifecycle.
    assert.equal(store.placements.placement(LEASE)?.owner, "one");
    assert.equal(store.placements.placement(LEASE)?.lifecycleId, undefined);

    store.placements.recordAttempt({
      leaseUuid: LEASE,
      backend: "one",
      operationId: OTHER_OP,
      kind: "provision",
      createdAt: 0,
    });
    apply(cb({ status: "failed", capability: { kind: "operation", id: OTHER_OP } }));
    await flush();
    assert.equal(sent[1]?.reason, "provisioning failed");
  });

  it("an unknown operation id, or the right id from another backend, changes nothing", async () => {
    assert.equal(apply(cb({ capability: { kind: "operation", id: OTHER_OP } })), "ignored-stale");
    assert.equal(apply(cb({ backend: "two" })), "ignored-stale");
    await flush();
    assert.equal(store.placements.attemptFor(LEASE)?.operationId, OP);
    assert.equal(store.placements.placement(LEASE), undefined);
    assert.deepEqual(sent, []);
  });

  it("a lifecycle `deprovisioned` retires the placement only when it comes from the owner", async () => {
    apply(cb());
    const lifecycle = { kind: "lifecycle" as const, id: OP };
    assert.equal(
      apply(cb({ backend: "two", capability: lifecycle, status: "deprovisioned" })),
      "ignored-stale",
    );
    assert.equal(store.placements.placement(LEASE)?.owner, "one");
    assert.equal(apply(cb({ capability: lifecycle, status: "failed" })), "observed");
    assert.equal(store.placements.placement(LEASE)?.owner, "one");
    assert.equal(apply(cb({ capability: lifecycle, status: "deprovisioned" })), "retired");
    assert.equal(store.placements.placement(LEASE), undefined);
  });

  it("a lifecycle callback must carry the exact id the owner was confirmed with", async () => {
    apply(cb());
    assert.equal(store.placements.placement(LEASE)?.lifecycleId, OP);
    const wrongId = { kind: "lifecycle" as const, id: OTHER_OP };
    assert.equal(apply(cb({ capability: wrongId, status: "deprovisioned" })), "ignored-stale");
    assert.equal(store.placements.placement(LEASE)?.owner, "one");
  });

  it("nothing reaches the chain for an ignored or observed callback", async () => {
    const applied = applyCallback(deps, cb({ capability: { kind: "operation", id: OTHER_OP } }));
    assert.deepEqual(applied, { result: "ignored-stale" });
    const ok = applyCallback(deps, cb());
    assert.deepEqual(ok.chain, { kind: "acknowledge" });
    await flush();
    assert.deepEqual(sent, [], "applyCallback alone sends nothing: the caller sends after fsync");
  });
});
