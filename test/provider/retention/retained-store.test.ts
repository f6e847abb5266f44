import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { callbackFrame, RETAINED_NOTICE } from "../../../src/provider/api/event-hub.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import type { LifecycleDeps, VerifiedCallback } from "../../../src/provider/lifecycle/index.ts";
import { applyCallback, sendChainAction } from "../../../src/provider/lifecycle/settle.ts";
import { type Attempt, PlacementStore } from "../../../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain, type SentTx } from "../lifecycle/deps.ts";

/**
 * The retained side of the placement store, and the callbacks that drive it, on a real
 * SQLite file: a `deprovisioned` callback with `retained: true` keeps the row (owner and
 * storage identity) instead of retiring it; pruning never removes a retained row; a
 * restore's admission claims the source and writes the target's attempt atomically; a
 * restore that settles successfully retires the source, one that fails or is refused
 * hands the data back to it.
 */
const dir = mkdtempSync(join(tmpdir(), "fred-retained-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const SID_ONE = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const SOURCE = "0190f3a2-7c1e-7000-8000-000000000001";
const TARGET = "0190f3a2-7c1e-7000-8000-000000000002";
const OTHER_TARGET = "0190f3a2-7c1e-7000-8000-000000000003";
const OP = "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";
const RESTORE_OP = "4a3d2c5b-6e7f-4a81-9bac-1d2e3f4a5b6c";
const flush = () => new Promise((r) => setImmediate(r));

let n = 0;
let store: PlacementStore;
let sent: SentTx[];
let deps: LifecycleDeps;
let clock: ManualClock;

beforeEach(() => {
  clock = new ManualClock(1_700_000_000_000);
  store = PlacementStore.create(
    join(dir, `p-${++n}.db`),
    PROVIDER_UUID,
    [
      { name: "one", storageId: SID_ONE, baseline: { provisions: 0, retentions: 0 } },
      {
        name: "two",
        storageId: "6d1f3a2b-4c5e-4f70-9bac-1d2e3f4a5b6c",
        baseline: { provisions: 0, retentions: 0 },
      },
    ],
    clock.now(),
  );
  sent = [];
  deps = lifecycleDeps({
    config: parseProviderConfig(yamlOf(baseConfig())),
    chain: recordingChain(sent),
    store,
    clock,
  });
  // The source was provisioned on "one" under OP (its lifecycle id).
  store.placements.recordAttempt({
    leaseUuid: SOURCE,
    backend: "one",
    operationId: OP,
    kind: "provision",
    createdAt: 0,
  });
  store.placements.settleOperation(SOURCE, OP, "success", clock.now());
});

function apply(c: VerifiedCallback): string {
  const applied = applyCallback(deps, c);
  sendChainAction(deps, c.leaseUuid, applied);
  return applied.result;
}

const closed = (over: Partial<VerifiedCallback> = {}): VerifiedCallback => ({
  backend: "one",
  leaseUuid: SOURCE,
  capability: { kind: "lifecycle", id: OP },
  status: "deprovisioned",
  error: "",
  retained: true,
  ...over,
});

const restoreAttempt = (target = TARGET, op = RESTORE_OP): Attempt => ({
  leaseUuid: target,
  backend: "one",
  operationId: op,
  kind: "restore",
  createdAt: clock.now(),
});

describe("retained placements", () => {
  it("a deprovisioned callback with retained: true keeps the row as retained, with owner and storage identity", () => {
    assert.equal(apply(closed()), "retained");
    const rec = store.placements.retained.get(SOURCE);
    assert.deepEqual(rec, {
      leaseUuid: SOURCE,
      owner: "one",
      storageId: SID_ONE,
      retainedAt: clock.now(),
      misses: 0,
      restoreTarget: undefined,
    });
    assert.equal(store.placements.placement(SOURCE)?.owner, "one");
    assert.deepEqual(callbackFrame(closed(), "retained"), { status: "retained", error: RETAINED_NOTICE });
  });

  it("without retained the row is retired; another backend's or a stale id's retained report changes nothing", () => {
    assert.equal(apply(closed({ backend: "two" })), "ignored-stale");
    assert.equal(apply(closed({ capability: { kind: "lifecycle", id: RESTORE_OP } })), "ignored-stale");
    assert.equal(store.placements.retained.get(SOURCE), undefined);
    assert.equal(apply(closed({ retained: false })), "retired");
    assert.equal(store.placements.placement(SOURCE), undefined);
  });

  it("placement pruning never removes a retained row", () => {
    apply(closed());
    assert.equal(store.placements.prunePlacement(SOURCE), false);
    assert.equal(store.placements.retained.get(SOURCE)?.owner, "one");
  });

  it("retires only after two consecutive misses; a sighting in between starts the count again", () => {
    apply(closed());
    store.placements.retained.sweepSaw(SOURCE, false);
    assert.equal(store.placements.retained.retireMissing(SOURCE, "one"), false, "one miss is not enough");
    store.placements.retained.sweepSaw(SOURCE, true);
    assert.equal(store.placements.retained.get(SOURCE)?.misses, 0);
    store.placements.retained.sweepSaw(SOURCE, false);
    store.placements.retained.sweepSaw(SOURCE, false);
    assert.equal(
      store.placements.retained.retireMissing(SOURCE, "two"),
      false,
      "only the owner's sweeps retire it",
    );
    assert.equal(store.placements.retained.retireMissing(SOURCE, "one"), true);
    assert.equal(store.placements.placement(SOURCE), undefined);
  });
});

describe("restore admission and settlement", () => {
  beforeEach(() => {
    apply(closed());
  });

  it("claims the source and writes the target attempt in one step; a second restore of either is refused", () => {
    assert.equal(store.placements.beginRestore(restoreAttempt(), SOURCE), "recorded");
    assert.equal(store.placements.attemptFor(TARGET)?.kind, "restore");
    assert.equal(store.placements.retained.get(SOURCE)?.restoreTarget, TARGET);
    assert.equal(store.placements.retained.sourceOf(TARGET)?.leaseUuid, SOURCE);
    assert.equal(
      store.placements.beginRestore(
        restoreAttempt(OTHER_TARGET, "5b4e3d6c-7f8a-4b92-8cbd-2e3f4a5b6c7d"),
        SOURCE,
      ),
      "source-busy",
    );
    assert.equal(store.placements.attemptFor(OTHER_TARGET), undefined, "a refused admission writes nothing");
    assert.equal(
      store.placements.beginRestore(restoreAttempt(TARGET, "5b4e3d6c-7f8a-4b92-8cbd-2e3f4a5b6c7d"), SOURCE),
      "target-busy",
    );
  });

  it("refuses a source that is not retained at the attempted backend", () => {
    assert.equal(
      store.placements.beginRestore({ ...restoreAttempt(), backend: "two" }, SOURCE),
      "source-busy",
    );
    assert.equal(store.placements.beginRestore(restoreAttempt(), OTHER_TARGET), "source-busy");
    assert.equal(store.placements.attemptFor(TARGET), undefined);
  });

  it("a successful restore callback acknowledges the target and retires the source", async () => {
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    const result = apply({
      backend: "one",
      leaseUuid: TARGET,
      capability: { kind: "operation", id: RESTORE_OP },
      status: "success",
      error: "",
    });
    assert.equal(result, "acknowledging");
    await flush();
    assert.deepEqual(sent, [{ kind: "acknowledge", uuids: [TARGET] }]);
    assert.equal(store.placements.placement(TARGET)?.lifecycleId, RESTORE_OP);
    assert.equal(store.placements.placement(SOURCE), undefined, "the data now belongs to the target");
  });

  it("a failed restore rejects the target with the curated message and hands the data back", async () => {
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    const failed = (error: string): VerifiedCallback => ({
      backend: "one",
      leaseUuid: TARGET,
      capability: { kind: "operation", id: RESTORE_OP },
      status: "failed",
      error,
    });
    assert.equal(apply(failed("")), "rejecting");
    await flush();
    assert.deepEqual(sent, [{ kind: "reject", uuids: [TARGET], reason: "restore failed" }]);
    const back = store.placements.retained.get(SOURCE);
    assert.equal(back?.restoreTarget, undefined);
    assert.equal(back?.owner, "one");
    // Handed back: the same source can be restored again.
    assert.equal(store.placements.beginRestore(restoreAttempt(OTHER_TARGET), SOURCE), "recorded");
  });

  it("a definite refusal, and an ended target's retired attempt, hand the data back too", () => {
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    store.placements.clearRefusedAttempt(TARGET, RESTORE_OP);
    assert.equal(store.placements.retained.get(SOURCE)?.restoreTarget, undefined);
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    assert.equal(store.placements.retireAttempt(TARGET, "one"), true);
    assert.equal(store.placements.retained.get(SOURCE)?.restoreTarget, undefined);
  });

  it("a positive inventory report of the target at its attempted backend settles the restore", () => {
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    assert.deepEqual(store.placements.applyPositiveInventory("one", [TARGET], clock.now()).confirmed, [
      TARGET,
    ]);
    assert.equal(store.placements.placement(SOURCE), undefined);
    assert.equal(store.placements.placement(TARGET)?.owner, "one");
  });

  it("a retained row with a restore in flight is neither retired by misses nor pruned", () => {
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    store.placements.retained.sweepSaw(SOURCE, false);
    store.placements.retained.sweepSaw(SOURCE, false);
    assert.equal(store.placements.retained.retireMissing(SOURCE, "one"), false);
    assert.equal(store.placements.prunePlacement(SOURCE), false);
  });

  it("survives a reopen (the marks are durable columns of the row)", async () => {
    store.placements.beginRestore(restoreAttempt(), SOURCE);
    await store.durable();
    const path = join(dir, `p-${n}.db`);
    store.close();
    store = PlacementStore.open(path, PROVIDER_UUID);
    assert.equal(store.placements.retained.get(SOURCE)?.restoreTarget, TARGET);
    assert.equal(store.placements.retained.all().length, 1);
  });
});
