import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { DashboardActivity, quantile } from "../../../src/provider/dashboard/activity.ts";
import { SampleRing } from "../../../src/provider/dashboard/sample-ring.ts";

/** The charts' ring (one sample a step, at most `capacity`) and the activity it samples. */
const figures = {
  leasesActive: 1,
  provisionsPerMinute: 0,
  latencyP50: null,
  latencyP99: null,
  apiRequestsPerSecond: 0,
  apiErrorsPerSecond: 0,
  earnings: {},
  creditCloses: 0,
};

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

describe("sample ring", () => {
  it("samples once per step and keeps at most `capacity`, oldest dropped", async () => {
    const clock = new ManualClock();
    let n = 0;
    const ring = new SampleRing({
      clock,
      stepMs: 60_000,
      capacity: 3,
      take: async () => ({ ...figures, leasesActive: ++n }),
    });
    ring.start();
    for (let i = 0; i < 5; i++) {
      clock.advance(60_000);
      await settle();
    }
    ring.stop();
    const kept = ring.within(86_400);
    assert.deepEqual(
      kept.map((s) => s.leasesActive),
      [3, 4, 5],
    );
    assert.equal(kept[1]!.t - kept[0]!.t, 60);
    assert.deepEqual(
      ring.within(60).map((s) => s.leasesActive),
      [5],
    );
    clock.advance(600_000);
    await settle();
    assert.equal(n, 5, "no sample after stop");
  });

  it("a failed sample skips the step and the next one still comes", async () => {
    const clock = new ManualClock();
    let calls = 0;
    const errors: unknown[] = [];
    const ring = new SampleRing({
      clock,
      stepMs: 1_000,
      take: async () => {
        if (++calls === 1) throw new Error("boom");
        return figures;
      },
      onError: (err) => errors.push(err),
    });
    ring.start();
    clock.advance(1_000);
    await settle();
    clock.advance(1_000);
    await settle();
    ring.stop();
    assert.equal(errors.length, 1);
    assert.equal(ring.within(3_600).length, 1);
  });
});

describe("dashboard activity", () => {
  it("counts provisions by hour for 24 hours and hands each step's figures over once", () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 10, 30));
    const a = new DashboardActivity(clock);
    a.provisionSettled("success", 1_000);
    a.provisionSettled("failed", 3_000);
    clock.advance(3_600_000);
    a.provisionSettled("success", 2_000);
    a.tenantAnswered(200);
    a.tenantAnswered(503);
    const hours = a.provisionsPerHour();
    assert.equal(hours.length, 24);
    assert.deepEqual(hours.at(-2), { hourMs: Date.UTC(2026, 0, 1, 10), succeeded: 1, failed: 1 });
    assert.deepEqual(hours.at(-1), { hourMs: Date.UTC(2026, 0, 1, 11), succeeded: 1, failed: 0 });
    const step = a.takeStep();
    assert.deepEqual(step, { provisions: 3, latencies: [1, 3, 2], apiRequests: 2, apiErrors: 1 });
    assert.deepEqual(a.takeStep(), { provisions: 0, latencies: [], apiRequests: 0, apiErrors: 0 });
    clock.advance(24 * 3_600_000);
    assert.ok(a.provisionsPerHour().every((h) => h.succeeded === 0 && h.failed === 0));
  });

  it("keeps a bounded sample of a busy step's latencies", () => {
    const a = new DashboardActivity(new ManualClock(), () => 0.5);
    for (let i = 0; i < 10_000; i++) a.provisionSettled("success", i);
    const step = a.takeStep();
    assert.equal(step.provisions, 10_000);
    assert.equal(step.latencies.length, 4_096);
  });

  it("quantiles by nearest rank", () => {
    assert.equal(quantile([], 0.5), null);
    assert.equal(quantile([3, 1, 2], 0.5), 2);
    assert.equal(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.99), 10);
    assert.equal(quantile([5], 0.99), 5);
  });
});
