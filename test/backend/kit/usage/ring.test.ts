import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ringBytes, SampleRing } from "../../../../src/backend/kit/usage/ring.ts";

/**
 * One instance's sample ring: it starts small and grows as samples come (a burst of new
 * leases must not allocate an hour of history each), keeps every sample in order while it
 * grows, and once full overwrites the oldest, never holding more than a full ring's bytes.
 */
const times = (r: SampleRing) => [...r.samples()].map((s) => s.atMs);
const metric = (r: SampleRing, m: number) => [...r.samples()].map((s) => s.value(m));

describe("kit usage sample ring", () => {
  it("starts with a few slots and grows, in order, up to its capacity", () => {
    const r = new SampleRing(360);
    assert.ok(r.bytes < ringBytes(360) / 10, `a new ring holds ${r.bytes} bytes`);
    for (let i = 0; i < 100; i++) r.push(i, [i, i * 2, undefined, 0, 1]);
    assert.equal(r.size, 100);
    assert.deepEqual(
      times(r),
      Array.from({ length: 100 }, (_, i) => i),
    );
    assert.deepEqual(
      metric(r, 1),
      Array.from({ length: 100 }, (_, i) => i * 2),
    );
    assert.ok(metric(r, 2).every(Number.isNaN), "undefined is stored as NaN");
    assert.ok(r.bytes < ringBytes(360), "not full yet, not at full size");
  });

  it("overwrites the oldest once full and stays at a full ring's bytes", () => {
    const r = new SampleRing(20);
    for (let i = 0; i < 53; i++) r.push(i, [i, 0, 0, 0, 0]);
    assert.equal(r.size, 20);
    assert.deepEqual(
      times(r),
      Array.from({ length: 20 }, (_, i) => 33 + i),
    );
    assert.deepEqual(
      metric(r, 0),
      Array.from({ length: 20 }, (_, i) => 33 + i),
    );
    assert.equal(r.bytes, ringBytes(20));
  });

  it("works with a capacity below its first allocation", () => {
    const r = new SampleRing(3);
    for (let i = 0; i < 5; i++) r.push(i, [i, 0, 0, 0, 0]);
    assert.deepEqual(times(r), [2, 3, 4]);
    assert.equal(r.bytes, ringBytes(3));
  });
});
