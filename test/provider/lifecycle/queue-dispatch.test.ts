import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { RateBuckets } from "../../../src/provider/callbacks/rate-limit.ts";
import { Dispatcher, KeyedQueue } from "../../../src/provider/lifecycle/index.ts";

const logger = createLogger("test", "silent");
const flush = () => new Promise((r) => setImmediate(r));

describe("KeyedQueue", () => {
  it("runs one lease's tasks in order, one at a time, and other leases alongside", async () => {
    const q = new KeyedQueue();
    const log: string[] = [];
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => {
      releaseA = r;
    });
    const a1 = q.run("a", async () => {
      log.push("a1 start");
      await gateA;
      log.push("a1 end");
    });
    const a2 = q.run("a", async () => {
      log.push("a2");
    });
    const b1 = q.run("b", async () => {
      log.push("b1");
    });
    await b1;
    assert.deepEqual(log, ["a1 start", "b1"], "b ran while a1 was still running; a2 waited");
    assert.equal(q.depth, 2);
    releaseA();
    await Promise.all([a1, a2]);
    assert.deepEqual(log, ["a1 start", "b1", "a1 end", "a2"]);
    assert.equal(q.depth, 0);
    assert.equal(q.activeKeys, 0);
  });

  it("a failing task rejects its caller and does not block the next task", async () => {
    const q = new KeyedQueue();
    await assert.rejects(
      q.run("a", async () => {
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.equal(await q.run("a", async () => 42), 42);
  });
});

describe("Dispatcher", () => {
  it("retries a retryable failure with doubling delays on the injected clock", async () => {
    const clock = new ManualClock();
    const d = new Dispatcher<{ ping: { n: number } }>({
      clock,
      logger,
      signal: new AbortController().signal,
    });
    const calls: number[] = [];
    d.on(
      "ping",
      "flaky",
      async () => {
        calls.push(clock.now());
        if (calls.length < 3) throw new FredError("ERR_X", "try again", { retryable: true });
      },
      { attempts: 5, initialDelayMs: 100, maxDelayMs: 1_000 },
    );
    const done = d.dispatch("ping", { n: 1 });
    await flush();
    clock.advance(100);
    await flush();
    clock.advance(200);
    await done;
    const t0 = calls[0]!;
    assert.deepEqual(
      calls.map((t) => t - t0),
      [0, 100, 300],
    );
    assert.deepEqual(d.stats, { handled: 1, retried: 2, failed: 0 });
  });

  it("gives up at once on a non-retryable failure, without affecting other handlers", async () => {
    const clock = new ManualClock();
    const d = new Dispatcher<{ ping: { n: number } }>({
      clock,
      logger,
      signal: new AbortController().signal,
    });
    const seen: number[] = [];
    d.on("ping", "broken", async () => {
      throw new FredError("ERR_BAD", "never works");
    });
    d.on("ping", "fine", async ({ n }) => {
      seen.push(n);
    });
    await d.dispatch("ping", { n: 7 });
    assert.deepEqual(seen, [7]);
    assert.deepEqual(d.stats, { handled: 1, retried: 0, failed: 1 });
  });
});

describe("RateBuckets", () => {
  it("allows the burst, then refuses with a Retry-After until tokens refill", () => {
    const clock = new ManualClock();
    const b = new RateBuckets(2, 3, clock);
    assert.deepEqual([b.take("ip"), b.take("ip"), b.take("ip")], [0, 0, 0]);
    assert.equal(b.take("ip"), 1);
    assert.equal(b.take("other"), 0, "keys have separate buckets");
    clock.advance(500);
    assert.equal(b.take("ip"), 0);
    assert.equal(b.take("ip"), 1);
  });
});
