import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ChainPort } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import type { ProviderConfig } from "../../../src/provider/config/index.ts";
import { soleLeader } from "../../../src/provider/ha/leadership.ts";
import { type HealthSources, healthReport } from "../../../src/provider/http/health.ts";
import type {
  BackendFleet,
  PayloadRecords,
  Placements,
  ReplayStore,
} from "../../../src/provider/store/index.ts";

/**
 * The health report's remote probes run on the injected clock: a chain node that never
 * answers makes the report degraded once the 3 s budget passes, not before, and the report
 * still comes back.
 */
describe("health report: remote probe budget", () => {
  it("a hanging chain probe is unhealthy at 3 s on the clock, and the report is degraded", async () => {
    const clock = new ManualClock(0);
    const sources: HealthSources = {
      config: { providerUuid: "p", backends: [] } as unknown as ProviderConfig,
      clock,
      chain: { latestBlock: () => new Promise<never>(() => {}) } as unknown as ChainPort,
      clients: new Map(),
      store: { counts: () => ({}) } as unknown as Placements,
      fleet: { baselineMatches: () => true } as unknown as BackendFleet,
      payloads: undefined,
      tokens: undefined,
      inFlight: () => 0,
      leadership: soleLeader("instance-a"),
      feedLive: () => true,
      recoveryDone: () => true,
    };
    let settled = false;
    const report = healthReport(sources).finally(() => {
      settled = true;
    });
    clock.advance(2_999);
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, "still waiting for the chain before the budget ends");
    clock.advance(1);
    const r = await report;
    assert.equal(r.status, "degraded");
    assert.deepEqual(
      [r.role, r.instance, r.leader],
      ["leader", "instance-a", "instance-a"],
      "alone, it leads",
    );
    assert.deepEqual(r.checks.chain, { status: "unhealthy", message: "chain query failed" });
  });

  it("a payload store or token tracker that cannot be read makes the report unhealthy, with a fixed phrase", async () => {
    const failing = () => Promise.reject(new Error("SQLITE_IOERR: disk I/O error at /var/lib/fred"));
    const sources: HealthSources = {
      config: { providerUuid: "p", backends: [] } as unknown as ProviderConfig,
      clock: new ManualClock(0),
      chain: { latestBlock: async () => ({ height: 1 }) } as unknown as ChainPort,
      clients: new Map(),
      store: { counts: () => ({}) } as unknown as Placements,
      fleet: { baselineMatches: () => true } as unknown as BackendFleet,
      payloads: { has: failing } as unknown as PayloadRecords,
      tokens: { size: failing } as unknown as ReplayStore,
      inFlight: () => 0,
      leadership: soleLeader("instance-a"),
      feedLive: () => true,
      recoveryDone: () => true,
    };
    const r = await healthReport(sources);
    assert.equal(r.status, "unhealthy");
    assert.deepEqual(r.checks.payload_store, { status: "unhealthy", message: "payload store is unreadable" });
    assert.deepEqual(r.checks.token_tracker, { status: "unhealthy", message: "token tracker is unreadable" });
    assert.ok(!JSON.stringify(r).includes("SQLITE"), "no internal text in the report");
  });
});
