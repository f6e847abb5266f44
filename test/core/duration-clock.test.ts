import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ManualClock } from "../../src/core/clock.ts";
import { formatGoDuration, parseDurationMs, parseGoDuration } from "../../src/core/duration.ts";
import { isFredError } from "../../src/core/errors.ts";

describe("Go durations", () => {
  it("parses the forms Go accepts", () => {
    assert.equal(parseGoDuration("30s"), 30e9);
    assert.equal(parseGoDuration("1m30s"), 90e9);
    assert.equal(parseGoDuration("1.5h"), 5400e9);
    assert.equal(parseGoDuration("500ms"), 500e6);
    assert.equal(parseGoDuration("2us"), 2000);
    assert.equal(parseGoDuration("2µs"), 2000);
    assert.equal(parseGoDuration("0"), 0);
    assert.equal(parseGoDuration("-1s"), -1e9);
    assert.equal(parseGoDuration(".5s"), 5e8);
    assert.equal(parseDurationMs("2160h"), 2160 * 3600_000);
  });
  it("refuses what Go refuses", () => {
    for (const bad of ["", "1", "1d", "s", "1 s", "1s ", "1.s.", "--1s", "1w"]) {
      assert.throws(
        () => parseGoDuration(bad),
        (e: unknown) => isFredError(e, "ERR_DURATION"),
        bad,
      );
    }
  });
  it("formats like Go's Duration.String", () => {
    assert.equal(formatGoDuration(0), "0s");
    assert.equal(formatGoDuration(30e9), "30s");
    assert.equal(formatGoDuration(90e9), "1m30s");
    assert.equal(formatGoDuration(3600e9), "1h0m0s");
    assert.equal(formatGoDuration(1.5e9), "1.5s");
    assert.equal(formatGoDuration(500e6), "500ms");
    assert.equal(formatGoDuration(1500), "1.5µs");
  });
  it("format → parse round-trips whole milliseconds (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), (ms) =>
        assert.equal(parseGoDuration(formatGoDuration(ms * 1e6)), ms * 1e6),
      ),
    );
  });
});

describe("ManualClock", () => {
  it("fires timers in due order only when time advances", async () => {
    const clock = new ManualClock(1000);
    const fired: string[] = [];
    clock.setTimer(50, () => fired.push("b"));
    clock.setTimer(10, () => fired.push("a"));
    const cancel = clock.setTimer(20, () => fired.push("never"));
    cancel();
    clock.advance(9);
    assert.equal(fired.length, 0);
    clock.advance(100);
    assert.deepEqual(fired, ["a", "b"]);
    assert.equal(clock.now(), 1109);
    const slept = clock.sleep(5).then(() => fired.push("slept"));
    clock.advance(5);
    await slept;
    assert.deepEqual(fired, ["a", "b", "slept"]);
  });
  it("cancels a sleep through its AbortSignal", async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const sleeping = clock.sleep(1000, ac.signal);
    ac.abort(new Error("stop"));
    await assert.rejects(sleeping, /stop/);
    assert.equal(clock.pendingTimers, 0);
  });
});
