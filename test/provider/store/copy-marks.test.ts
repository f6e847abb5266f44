import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CopyMarks, PlacementStore } from "../../../src/provider/store/index.ts";
import { code, createStore, databasePerTest, PROVIDER, T0 } from "./fixture.ts";

const files = databasePerTest("fred-copy-marks-");
const fresh = () => createStore(files.path);

describe("copy marks", () => {
  it("a marked copy opens read-write only once attested; attesting clears every baseline", () => {
    fresh().close();
    CopyMarks.mark(files.path, T0 + 10);
    assert.equal(
      code(() => PlacementStore.open(files.path, PROVIDER)),
      "ERR_PLACEMENT_RESTORED",
    );
    using reader = PlacementStore.open(files.path, PROVIDER, { readonly: true });
    assert.equal(reader.copies.takenAt(), T0 + 10, "a reader sees the mark without attesting");
    reader.close();
    using store = PlacementStore.open(files.path, PROVIDER, { restoredCopy: "allow" });
    assert.equal(store.fleet.baselineMatches(["one", "two"]), true);
    assert.deepEqual(store.copies.attest(T0 + 20), { copy_taken_at: T0 + 10 });
    assert.equal(store.copies.takenAt(), undefined);
    assert.equal(store.fleet.baselineMatches(["one", "two"]), false, "readiness waits for a fresh sweep");
    assert.equal(
      code(() => store.copies.attest(T0 + 30)),
      "ERR_PLACEMENT_RESTORED",
      "nothing left to attest",
    );
    store.close();
    PlacementStore.open(files.path, PROVIDER).close();
  });

  it("the original store is no copy", () => {
    using store = fresh();
    assert.equal(store.copies.takenAt(), undefined);
    assert.equal(
      code(() => store.copies.attest(T0)),
      "ERR_PLACEMENT_RESTORED",
    );
  });
});
