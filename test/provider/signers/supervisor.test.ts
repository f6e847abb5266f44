import assert from "node:assert/strict";
import { once } from "node:events";
import { describe, it } from "node:test";
import { emptyPassReport, type LanePassReport } from "../../../src/chain/cosmos/signer-lanes.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { SignerSupervisor } from "../../../src/provider/signers/index.ts";

const report = (over: Partial<LanePassReport> = {}): LanePassReport => ({ ...emptyPassReport(), ...over });

/** A converge step the test answers by hand, one pass at a time. */
function scripted() {
  const calls: { resolve: (r: LanePassReport) => void; reject: (e: Error) => void }[] = [];
  const converge = () =>
    new Promise<LanePassReport>((resolve, reject) => {
      calls.push({ resolve, reject });
    });
  return { calls, converge };
}

const HOUR = 3_600_000;

describe("signer supervisor (the pass schedule)", () => {
  it("re-runs a converged pass each interval, an unsettled one with backoff, a failed one too", async () => {
    const clock = new ManualClock();
    const { calls, converge } = scripted();
    const s = new SignerSupervisor({
      converge,
      clock,
      intervalMs: HOUR,
      retry: { initialMs: 1_000, maxMs: 4_000 },
    });
    const started = s.start();
    calls[0]?.resolve(report());
    await started;
    clock.advance(HOUR - 1);
    assert.equal(calls.length, 1);
    clock.advance(1);
    assert.equal(calls.length, 2, "the interval's pass");
    let pass = once(s, "pass");
    calls[1]?.resolve(report({ readErrors: 3, unsettled: 1, errors: ["grant read failed"] }));
    assert.equal((await pass)[0], "unsettled");
    clock.advance(1_000);
    assert.equal(calls.length, 3, "retried after 1 s, not an hour");
    pass = once(s, "pass");
    calls[2]?.reject(new Error("node down"));
    assert.equal((await pass)[0], "failed");
    clock.advance(1_999);
    assert.equal(calls.length, 3);
    clock.advance(1);
    assert.equal(calls.length, 4, "backoff doubled to 2 s");
    pass = once(s, "pass");
    calls[3]?.resolve(report());
    await pass;
    clock.advance(HOUR - 1);
    assert.equal(calls.length, 4, "converged again: back to the interval, backoff reset");
    assert.deepEqual(Object.fromEntries(s.passes), { converged: 2, unsettled: 1, failed: 1 });
    await s.stop();
    assert.equal(clock.pendingTimers, 0);
  });

  it("a trigger runs a pass at once; during a pass it runs exactly one more after it", async () => {
    const clock = new ManualClock();
    const { calls, converge } = scripted();
    const s = new SignerSupervisor({ converge, clock, intervalMs: HOUR });
    const started = s.start();
    calls[0]?.resolve(report());
    await started;
    s.trigger();
    assert.equal(calls.length, 2, "triggered while waiting: at once");
    s.trigger();
    s.trigger();
    assert.equal(calls.length, 2, "never two passes at a time");
    const pass = once(s, "pass");
    calls[1]?.resolve(report());
    await pass;
    await new Promise((r) => setImmediate(r));
    assert.equal(calls.length, 3, "the triggers during the pass ran one more");
    const stopped = s.stop();
    calls[2]?.resolve(report());
    await stopped;
    s.trigger();
    assert.equal(calls.length, 3, "stopped: triggers do nothing");
    assert.equal(clock.pendingTimers, 0);
  });
});
