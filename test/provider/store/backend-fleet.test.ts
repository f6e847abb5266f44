import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import {
  attempt,
  code,
  createStore,
  databasePerTest,
  LEASE_1,
  LEASE_2,
  OP_1,
  OP_2,
  PROVIDER,
  SID_1,
  T0,
} from "./fixture.ts";

const files = databasePerTest("fred-fleet-");
const fresh = () => createStore(files.path);

describe("backend fleet", () => {
  it("records a new baseline per backend", () => {
    using store = fresh();
    store.fleet.recordBaseline("two", { provisions: 4, retentions: 1 }, T0 + 60_000);
    assert.deepEqual(store.fleet.backends()[1]!.baseline, { provisions: 4, retentions: 1, at: T0 + 60_000 });
    assert.equal(
      code(() => store.fleet.recordBaseline("nope", { provisions: 0, retentions: 0 }, T0)),
      "ERR_PLACEMENT_UNKNOWN_BACKEND",
    );
  });

  it("adds a pin once: a known name or storage ID is refused, never replaced", () => {
    using store = fresh();
    const pin = (name: string, storageId: string) => ({
      name,
      storageId,
      baseline: { provisions: 0, retentions: 0 },
    });
    store.fleet.addBackend(pin("three", "8b3e4c60-ad5f-4e70-9b82-9cadbe1f2041"), T0 + 1);
    assert.equal(store.fleet.isPinned("three"), true);
    assert.equal(
      code(() => store.fleet.addBackend(pin("three", "9c4f5d71-be60-4f81-8c93-adbecf203152"), T0)),
      "ERR_PLACEMENT_STORAGE_ID",
    );
    assert.equal(
      code(() => store.fleet.addBackend(pin("four", SID_1), T0)),
      "ERR_PLACEMENT_STORAGE_ID",
    );
    assert.equal(
      code(() => store.fleet.addBackend(pin("four", LEASE_1), T0)),
      "ERR_PLACEMENT_STORAGE_ID",
    );
    assert.deepEqual(
      store.fleet.backends().map((b) => b.name),
      ["one", "three", "two"],
    );
  });

  it("a lost backend stays pinned; the mark survives reopening", () => {
    using store = fresh();
    assert.equal(store.fleet.anyLost, false);
    store.fleet.markLost("one", T0 + 5);
    assert.equal(store.fleet.isLost("one"), true);
    assert.equal(store.fleet.isLost("two"), false);
    assert.equal(store.fleet.baselineMatches(["two"]), true, "a lost backend is not part of the topology");
    store.close();
    using again = PlacementStore.open(files.path, PROVIDER);
    assert.equal(again.fleet.anyLost, true);
    assert.equal(again.fleet.backends()[0]!.lostAt, T0 + 5);
  });

  it("removes a pin only while no owner, conflict candidate or attempt names it", () => {
    using store = fresh();
    store.placements.adoptPlacement(LEASE_1, "one", T0);
    assert.equal(
      code(() => store.fleet.removeBackend("one")),
      "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
      "an owner",
    );
    store.placements.quarantine(LEASE_1, ["one", "two"], T0);
    assert.equal(
      code(() => store.fleet.removeBackend("two")),
      "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
      "a candidate",
    );
    store.placements.quarantine(LEASE_1, ["one"], T0);
    store.placements.recordAttempt(attempt(LEASE_2, "two", OP_2));
    assert.equal(
      code(() => store.fleet.removeBackend("two")),
      "ERR_PLACEMENT_MEMBERSHIP_REFUSED",
      "an attempt",
    );
    store.placements.clearRefusedAttempt(LEASE_2, OP_2);
    store.fleet.removeBackend("two");
    assert.equal(store.fleet.isPinned("two"), false);
    assert.deepEqual(
      store.fleet.backends().map((b) => b.name),
      ["one"],
    );
    assert.equal(
      code(() => store.placements.recordAttempt(attempt(LEASE_2, "two", OP_1))),
      "ERR_PLACEMENT_UNKNOWN_BACKEND",
    );
  });
});
