import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Admission } from "../../../src/core/async/index.ts";

/** An admission whose started work is held until the test releases it. */
function held(limit: number) {
  const started: string[] = [];
  const releases = new Map<string, () => void>();
  const admission = new Admission<number>(limit, (key, _value, release) => {
    started.push(key);
    releases.set(key, release);
  });
  return { admission, started, releases };
}

describe("Admission", () => {
  it("starts at most `limit` at once and the rest in arrival order as slots come back", () => {
    const { admission, started, releases } = held(2);
    for (const k of ["a", "b", "c", "d"]) assert.equal(admission.add(k, 0), true);
    assert.deepEqual(started, ["a", "b"]);
    assert.equal(admission.waiting, 2);
    assert.equal(admission.admitted, 2);
    releases.get("b")?.();
    assert.deepEqual(started, ["a", "b", "c"]);
    releases.get("b")?.(); // a second release of the same slot gives nothing back
    assert.deepEqual(started, ["a", "b", "c"]);
    releases.get("a")?.();
    releases.get("c")?.();
    assert.deepEqual(started, ["a", "b", "c", "d"]);
    assert.equal(admission.waiting, 0);
    assert.equal(admission.admitted, 1);
  });

  it("keeps one waiting entry per key (the first value), and drops removed or cleared ones", () => {
    const values: number[] = [];
    const releases: (() => void)[] = [];
    const admission = new Admission<number>(1, (_key, value, release) => {
      values.push(value);
      releases.push(release);
    });
    admission.add("running", 1);
    assert.equal(admission.add("x", 2), true);
    assert.equal(admission.add("x", 3), false);
    assert.equal(admission.has("x"), true);
    admission.add("y", 4);
    admission.add("z", 5);
    assert.equal(admission.remove("y"), true);
    assert.equal(admission.remove("running"), false); // started work is not waiting
    releases.shift()?.();
    assert.deepEqual(values, [1, 2]);
    admission.clear();
    releases.shift()?.();
    assert.deepEqual(values, [1, 2]);
    assert.equal(admission.waiting, 0);
    assert.equal(admission.admitted, 0);
  });

  it("a release from inside `start` admits the next entry without recursing", () => {
    const started: string[] = [];
    const admission = new Admission<number>(1, (key, _value, release) => {
      started.push(key);
      release();
    });
    for (let i = 0; i < 10_000; i++) admission.add(`k${i}`, i);
    assert.equal(started.length, 10_000);
    assert.equal(admission.admitted, 0);
  });

  it("refuses a limit below one", () => {
    assert.throws(() => new Admission(0, () => {}), RangeError);
  });
});
