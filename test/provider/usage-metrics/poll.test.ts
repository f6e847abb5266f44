import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pino from "pino";
import { Registry } from "prom-client";
import type { LeaseUsageRow } from "../../../src/core/backend-contract/index.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import type { BackendConfig } from "../../../src/provider/config/index.ts";
import {
  USAGE_PAGE_DEADLINE_MS,
  USAGE_POLL_FIRST_MS,
  USAGE_POLL_MAX_MS,
  USAGE_POLL_MIN_MS,
  UsageMetricsPoll,
} from "../../../src/provider/usage-metrics/poll.ts";

/**
 * The usage poll on its own, on a manual clock, against a scripted backend client: the
 * interval follows the backend's sampling interval within 5–60 s (15 s until it answered),
 * a backend that cannot sample is logged once and polled rarely, a hung page read is cut
 * at the page deadline and the backend's series survive exactly one failed pass, and a
 * fenced backend is never asked.
 */
const LEASE = "00000000-0000-4000-8000-000000000001";

const row = (): LeaseUsageRow => ({
  lease_uuid: LEASE,
  instances: [
    {
      service: "app",
      instance: 0,
      sampled_at: "2026-12-05T12:00:00.000Z",
      cpu_cores: 0.1,
      cpu_limit_cores: 0.5,
      cpu_throttled_seconds: 0,
      memory_bytes: 1,
      memory_limit_bytes: 2,
      network_rx_bytes: 0,
      network_tx_bytes: 0,
      disk_bytes: 0,
      disk_quota_bytes: 0,
      restarts: 0,
      started_at: "2026-12-05T11:00:00.000Z",
      uptime_seconds: 1,
    },
  ],
});

type Answer = { kind: "usage"; intervalSeconds: number } | { kind: "unsupported" } | { kind: "hang" };

/** A backend client whose `currentUsage` answers from a script, one entry per call (the last repeats). */
function scripted(answers: Answer[]): { client: BackendClient; calls: number[]; clock: ManualClock } {
  const clock = new ManualClock();
  const calls: number[] = [];
  const client = {
    currentUsage(signal?: AbortSignal, onPage?: () => void) {
      calls.push(clock.now());
      const answer = answers[Math.min(calls.length - 1, answers.length - 1)] as Answer;
      if (answer.kind === "unsupported")
        return Promise.reject(new FredError("ERR_BACKEND_UNSUPPORTED", "no usage here"));
      if (answer.kind === "hang")
        return new Promise((_resolve, reject) =>
          signal?.addEventListener("abort", () => reject(signal.reason), { once: true }),
        );
      onPage?.();
      return Promise.resolve({ leases: [row()], sampleIntervalSeconds: answer.intervalSeconds });
    },
  } as unknown as BackendClient;
  return { client, calls, clock };
}

function poll(
  client: BackendClient,
  clock: ManualClock,
  backend: Partial<BackendConfig> = {},
): { poll: UsageMetricsPoll; logged: Record<string, unknown>[] } {
  const logged: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => logged.push(JSON.parse(line)) });
  const config = { name: "b1", fenced: false, ...backend } as BackendConfig;
  const p = new UsageMetricsPoll({
    backends: [config],
    clients: new Map([["b1", client]]),
    registry: new Registry(),
    clock,
    logger,
  });
  return { poll: p, logged };
}

/** Lets the poll's promise chains run (each pass awaits a few microtasks). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function advance(clock: ManualClock, ms: number): Promise<void> {
  clock.advance(ms);
  await settle();
}

describe("usage poll", () => {
  it("polls at the backend's sampling interval, clamped to 5–60 s", async () => {
    const { client, calls, clock } = scripted([
      { kind: "usage", intervalSeconds: 1 },
      { kind: "usage", intervalSeconds: 600 },
      { kind: "usage", intervalSeconds: 10 },
    ]);
    const { poll: p } = poll(client, clock);
    p.start();
    await settle();
    assert.equal(calls.length, 1, "a first pass at start");
    // It asked for 1 s: the next pass waits the 5 s floor, not less.
    await advance(clock, USAGE_POLL_MIN_MS - 1);
    assert.equal(calls.length, 1);
    await advance(clock, 1);
    assert.equal(calls.length, 2);
    // It asked for 600 s: the ceiling of 60 s holds.
    await advance(clock, USAGE_POLL_MAX_MS - 1);
    assert.equal(calls.length, 2);
    await advance(clock, 1);
    assert.equal(calls.length, 3);
    // 10 s is within the bounds and taken as it is.
    await advance(clock, 10_000);
    assert.equal(calls.length, 4);
    assert.equal(p.series.size, 1);
    await p.stop();
  });

  it("waits 15 s between passes until the backend has answered once", async () => {
    const { client, calls, clock } = scripted([{ kind: "hang" }, { kind: "usage", intervalSeconds: 10 }]);
    const { poll: p } = poll(client, clock);
    p.start();
    await settle();
    await advance(clock, USAGE_PAGE_DEADLINE_MS); // the hung first pass is cut
    assert.equal(calls.length, 1);
    await advance(clock, USAGE_POLL_FIRST_MS - 1);
    assert.equal(calls.length, 1);
    await advance(clock, 1);
    assert.equal(calls.length, 2);
    await p.stop();
  });

  it("logs a backend that cannot sample once, drops its series and polls it once a minute", async () => {
    const { client, calls, clock } = scripted([
      { kind: "usage", intervalSeconds: 10 },
      { kind: "unsupported" },
      { kind: "unsupported" },
      { kind: "unsupported" },
    ]);
    const { poll: p, logged } = poll(client, clock);
    p.start();
    await settle();
    assert.equal(p.series.size, 1);
    await advance(clock, 10_000);
    assert.equal(calls.length, 2);
    assert.equal(p.series.size, 0, "no series from a backend that cannot sample");
    await advance(clock, USAGE_POLL_MAX_MS - 1);
    assert.equal(calls.length, 2);
    await advance(clock, 1);
    await advance(clock, USAGE_POLL_MAX_MS);
    assert.equal(calls.length, 4);
    const notes = logged.filter((l) => String(l.msg).includes("cannot sample usage"));
    assert.equal(notes.length, 1, "logged once, not at every pass");
    assert.equal(logged.filter((l) => l.level === 40).length, 0, "an unsupported backend is not a failure");
    await p.stop();
  });

  it("cuts a hung page at the deadline and keeps the series for one failed pass only", async () => {
    const { client, calls, clock } = scripted([
      { kind: "usage", intervalSeconds: 10 },
      { kind: "hang" },
      { kind: "hang" },
    ]);
    const { poll: p, logged } = poll(client, clock);
    p.start();
    await settle();
    assert.equal(p.series.size, 1);
    await advance(clock, 10_000); // the second pass starts and hangs
    assert.equal(calls.length, 2);
    await advance(clock, USAGE_PAGE_DEADLINE_MS - 1);
    assert.equal(p.series.size, 1, "still waiting for the page");
    await advance(clock, 1);
    assert.equal(p.series.size, 1, "one failed pass is forgiven");
    const warned = logged.filter((l) => l.level === 40);
    assert.equal(warned.length, 1);
    assert.match(String((warned[0]?.err as { message?: string })?.message), /no usage page within/);
    await advance(clock, 10_000); // third pass, hangs too
    await advance(clock, USAGE_PAGE_DEADLINE_MS);
    assert.equal(calls.length, 3);
    assert.equal(p.series.size, 0, "a second failed pass in a row drops the backend's series");
    await p.stop();
  });

  it("never asks a fenced backend", async () => {
    const { client, calls, clock } = scripted([{ kind: "usage", intervalSeconds: 10 }]);
    const { poll: p } = poll(client, clock, { fenced: true });
    p.start();
    await advance(clock, USAGE_POLL_MAX_MS);
    assert.equal(calls.length, 0);
    await p.stop();
  });
});
