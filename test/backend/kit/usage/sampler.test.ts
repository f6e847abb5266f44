import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { InstanceSample } from "../../../../src/backend/kit/index.ts";
import { UsageSampler } from "../../../../src/backend/kit/index.ts";
import { usageSchema } from "../../../../src/core/backend-contract/index.ts";
import { ManualClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";

/**
 * The kit's usage sampler against a scripted `sampleUsage`: cores from CPU time between
 * two samples of one run, nothing across a restart, rings bounded at an hour, leases and
 * instances forgotten as soon as a pass no longer reports them, and a body the contract's
 * reader accepts.
 */
const A = "0b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
const B = "1b9a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";

function sample(index: number, cpu: number, startedAtMs = 1000): InstanceSample {
  return {
    service: "web",
    index,
    cpuUsageSeconds: cpu,
    cpuThrottledSeconds: 0,
    cpuLimitCores: 1,
    memoryBytes: 100,
    memoryLimitBytes: 1000,
    networkRxBytes: 1,
    networkTxBytes: 2,
    diskBytes: undefined,
    diskQuotaBytes: undefined,
    restarts: 0,
    startedAtMs,
  };
}

function harness() {
  const clock = new ManualClock();
  let next = new Map<string, InstanceSample[]>();
  const sampler = new UsageSampler({
    sample: async () => next,
    clock,
    intervalMs: 10_000,
    logger: createLogger("test", "silent"),
  });
  return {
    sampler,
    pass: async (m: Map<string, InstanceSample[]>, advanceMs = 10_000) => {
      clock.advance(advanceMs);
      next = m;
      await sampler.sampleNow();
    },
  };
}

describe("kit usage sampler", () => {
  it("averages cores over the last interval and starts over after a restart", async () => {
    const h = harness();
    await h.pass(new Map([[A, [sample(0, 10)]]]));
    assert.equal(h.sampler.read(A).instances[0]?.cpu_cores, null, "one sample: no rate yet");
    await h.pass(new Map([[A, [sample(0, 15)]]]));
    assert.equal(h.sampler.read(A).instances[0]?.cpu_cores, 0.5);
    await h.pass(new Map([[A, [sample(0, 1, 2000)]]]));
    const body = h.sampler.read(A);
    assert.equal(body.instances[0]?.cpu_cores, null, "a new run has no rate against the old one");
    assert.deepEqual(body.history.instances[0]?.cpu_cores, [null, 0.5, null]);
    assert.equal(body.history.timestamps.length, 3);
    assert.equal(usageSchema.safeParse(body).success, true);
  });

  it("keeps an hour per instance and forgets what a pass no longer reports", async () => {
    const h = harness();
    assert.equal(h.sampler.capacity, 360);
    for (let i = 0; i < 400; i++)
      await h.pass(
        new Map([
          [A, [sample(0, i), sample(1, i)]],
          [B, [sample(0, i)]],
        ]),
      );
    const full = h.sampler.read(A);
    assert.equal(full.history.timestamps.length, 360);
    assert.equal(full.history.instances.length, 2);
    assert.equal(usageSchema.safeParse(full).success, true);
    await h.pass(new Map([[A, [sample(0, 500)]]]));
    assert.equal(h.sampler.leaseCount, 1, "B is forgotten");
    assert.deepEqual(h.sampler.read(B), {
      sample_interval_seconds: 10,
      instances: [],
      history: { timestamps: [], instances: [] },
    });
    assert.deepEqual(
      h.sampler.read(A).instances.map((i) => i.instance),
      [0],
      "instance 1 is forgotten",
    );
  });

  it("the contract's reader refuses history arrays that do not align", async () => {
    const h = harness();
    await h.pass(new Map([[A, [sample(0, 1)]]]));
    await h.pass(new Map([[A, [sample(0, 2)]]]));
    const body = structuredClone(h.sampler.read(A));
    body.history.instances[0]?.memory_bytes.pop();
    assert.equal(usageSchema.safeParse(body).success, false);
  });
});
