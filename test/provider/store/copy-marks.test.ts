import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, beforeEach, describe, it } from "node:test";
import { CopyMarks, PlacementStore } from "../../../src/provider/store/index.ts";
import { code, createStore, PROVIDER, T0 } from "./fixture.ts";

const root = mkdtempSync(join(tmpdir(), "fred-copy-marks-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
let path: string;
beforeEach(() => {
  path = join(root, `p${++n}.db`);
});
const fresh = () => createStore(path);

describe("copy marks", () => {
  it("a marked copy opens read-write only once attested; attesting clears every baseline", () => {
    fresh().close();
    CopyMarks.mark(path, T0 + 10);
    assert.equal(
      code(() => PlacementStore.open(path, PROVIDER)),
      "ERR_PLACEMENT_RESTORED",
    );
    using reader = PlacementStore.open(path, PROVIDER, { readonly: true });
    assert.equal(reader.copies.takenAt(), T0 + 10, "a reader sees the mark without attesting");
    reader.close();
    using store = PlacementStore.open(path, PROVIDER, { restoredCopy: "allow" });
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
    PlacementStore.open(path, PROVIDER).close();
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
