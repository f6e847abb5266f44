import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  CAP_BELOW_BYTES,
  CAPPED_GROWTH_PERCENT,
  growthPercentFor,
  startHeapPolicy,
} from "../../src/provider/heap-policy.ts";

/** A real full collection (and the `gc` performance entry the policy listens for). */
setFlagsFromString("--expose-gc");
const fullGc = runInNewContext("gc") as () => void;

/** Resolves after the observer had a chance to see the collection's entry. */
const afterEntries = () => new Promise((r) => setTimeout(r, 50));

describe("providerd's heap policy", () => {
  it("caps growth while the live heap is small and gives V8 its own policy from CAP_BELOW_BYTES", () => {
    assert.equal(growthPercentFor(40 * 1024 * 1024), CAPPED_GROWTH_PERCENT);
    assert.equal(growthPercentFor(CAP_BELOW_BYTES - 1), CAPPED_GROWTH_PERCENT);
    assert.equal(growthPercentFor(CAP_BELOW_BYTES), 0);
    assert.equal(growthPercentFor(600 * 1024 * 1024), 0);
  });

  it("an operator's --heap-growing-percent on node's command line wins: the policy does nothing", () => {
    const set: string[] = [];
    const setFlags = (f: string) => set.push(f);
    assert.equal(startHeapPolicy({ execArgv: ["--heap-growing-percent=50"], setFlags }), undefined);
    assert.equal(
      startHeapPolicy({ execArgv: ["--max-old-space-size=512", "--heap_growing_percent=20"], setFlags }),
      undefined,
    );
    assert.deepEqual(set, []);
  });

  it("follows the live heap at each full collection, and stop() hands growth back to V8", async () => {
    const set: string[] = [];
    fullGc();
    const policy = startHeapPolicy({ execArgv: [], setFlags: (f) => set.push(f) });
    assert.ok(policy !== undefined);
    // The test process's live heap is far below the threshold.
    assert.deepEqual(set, [`--heap-growing-percent=${CAPPED_GROWTH_PERCENT}`]);
    assert.equal(policy.percent, CAPPED_GROWTH_PERCENT);

    // Live data past the threshold: the next full collection switches to V8's policy.
    // 1,600 arrays of 12,000 doubles: about 150 MB on the heap.
    let held: number[][] | undefined = Array.from({ length: 1_600 }, (_, i) =>
      new Array(12_000).fill(i + 0.5),
    );
    fullGc();
    await afterEntries();
    assert.equal(held.length, 1_600);
    assert.deepEqual(set.slice(1), ["--heap-growing-percent=0"]);
    assert.equal(policy.percent, 0);

    // Released: capped again after the next one.
    held = undefined;
    fullGc();
    await afterEntries();
    assert.deepEqual(set.slice(2), [`--heap-growing-percent=${CAPPED_GROWTH_PERCENT}`]);

    policy.stop();
    assert.deepEqual(set.slice(3), ["--heap-growing-percent=0"]);
    fullGc();
    await afterEntries();
    assert.equal(set.length, 4, "no more changes once stopped");
  });

  it("uncapped() gives V8 its own policy for the work's duration, also when the work fails", async () => {
    const set: string[] = [];
    fullGc();
    let collections = 0;
    const policy = startHeapPolicy({
      execArgv: [],
      setFlags: (f) => set.push(f),
      collect: () => {
        collections++;
        fullGc();
      },
    });
    assert.ok(policy !== undefined);
    // A sweep with a full collection in it: that collection set a limit under V8's policy.
    const during = await policy.uncapped(async () => {
      fullGc();
      return policy.percent;
    });
    assert.equal(collections, 0, "the sweep's result does not wait for the collection");
    await afterEntries();
    assert.equal(collections, 1, "a full collection once the sweep ends, so the cap applies at once");
    assert.equal(during, 0);
    await assert.rejects(
      policy.uncapped(async () => {
        fullGc();
        throw new Error("sweep failed");
      }),
      /sweep failed/,
    );
    assert.equal(policy.percent, CAPPED_GROWTH_PERCENT);
    await afterEntries();
    const capped = `--heap-growing-percent=${CAPPED_GROWTH_PERCENT}`;
    const v8s = "--heap-growing-percent=0";
    assert.deepEqual(set, [capped, v8s, capped, v8s, capped]);
    assert.equal(collections, 2);
    policy.settle();
    assert.equal(collections, 3);
    policy.stop();
    policy.settle();
    assert.equal(collections, 3, "nothing once stopped");
  });

  it("a sweep that ran no full collection left the capped limit in force: nothing is forced after it", async () => {
    fullGc();
    await afterEntries();
    let collections = 0;
    const policy = startHeapPolicy({
      execArgv: [],
      setFlags: () => {},
      collect: () => {
        collections++;
        fullGc();
      },
    });
    assert.ok(policy !== undefined);
    try {
      // Overlapping sweeps count as one stretch under V8's policy.
      await Promise.all([policy.uncapped(async () => 1), policy.uncapped(async () => 2)]);
      await afterEntries();
      assert.equal(collections, 0);
      // A collection after the sweep (under the cap again) does not count for it either.
      await policy.uncapped(async () => 3);
      fullGc();
      await afterEntries();
      assert.equal(collections, 0);
      // Two overlapping sweeps, a full collection in the second one: one settle at the end.
      let release = () => {};
      const first = policy.uncapped(() => new Promise<void>((r) => (release = r)));
      await policy.uncapped(async () => fullGc());
      await afterEntries();
      assert.equal(collections, 0, "not while the first sweep still runs");
      release();
      await first;
      await afterEntries();
      assert.equal(collections, 1);
    } finally {
      policy.stop();
    }
  });
});
