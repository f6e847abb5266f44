import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, it } from "node:test";
import {
  Backoff,
  Coalescer,
  KeyedMutex,
  PeriodicPass,
  RateBuckets,
  retry,
  withDeadline,
  withStallDeadline,
} from "../../../src/core/async/index.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError, isFredError } from "../../../src/core/errors.ts";

const tick = () => new Promise<void>((r) => setImmediate(r));

describe("KeyedMutex", () => {
  it("runs one task per key in order, different keys concurrently, failures do not block", async () => {
    const m = new KeyedMutex();
    const log: string[] = [];
    let releaseA!: () => void;
    const a1 = m.run("a", () => new Promise<void>((r) => (releaseA = r)).then(() => log.push("a1")));
    const a2 = m.run("a", async () => {
      log.push("a2");
      throw new Error("boom");
    });
    const a3 = m.run("a", async () => log.push("a3"));
    const b1 = m.run("b", async () => log.push("b1"));
    await b1;
    assert.deepEqual(log, ["b1"]);
    assert.equal(m.isBusy("a"), true);
    assert.equal(await m.tryRun("a", async () => {}), false);
    releaseA();
    await a1;
    await assert.rejects(a2, /boom/);
    await a3;
    assert.deepEqual(log, ["b1", "a1", "a2", "a3"]);
    await m.idle();
    assert.equal(m.depth, 0);
    assert.equal(m.activeKeys, 0);
    assert.equal(await m.tryRun("a", async () => {}), true);
  });
});

describe("Backoff", () => {
  it("grows by the factor up to the cap and resets", () => {
    const b = new Backoff({ initialMs: 100, maxMs: 500 });
    assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [100, 200, 400, 500]);
    b.reset();
    assert.equal(b.next(), 100);
  });
  it("follows a fixed schedule and repeats its last entry", () => {
    const b = new Backoff([0, 10, 30]);
    assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [0, 10, 30, 30]);
  });
  it("keeps jittered delays within the band", () => {
    const lo = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.25 }, () => 0);
    const hi = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.25 }, () => 0.999999);
    assert.equal(lo.next(), 750);
    assert.equal(hi.next(), 1250);
  });
});

describe("retry", () => {
  it("retries retryable failures on the clock and returns the first success", async () => {
    const clock = new ManualClock();
    const delays: number[] = [];
    let calls = 0;
    const p = retry(
      async (attempt) => {
        calls++;
        if (attempt < 3) throw new Error("flaky");
        return "ok";
      },
      { clock, backoff: { initialMs: 100, maxMs: 1000 }, onRetry: (_e, _a, d) => delays.push(d) },
    );
    for (let i = 0; i < 5; i++) {
      await tick();
      clock.advance(1000);
    }
    assert.equal(await p, "ok");
    assert.equal(calls, 3);
    assert.deepEqual(delays, [100, 200]);
  });
  it("stops at a non-retryable error and after the last try", async () => {
    const clock = new ManualClock();
    let calls = 0;
    await assert.rejects(
      retry(
        async () => {
          calls++;
          throw new FredError("ERR_CONFIG", "final");
        },
        { clock, backoff: [0] },
      ),
      /final/,
    );
    assert.equal(calls, 1);
    calls = 0;
    await assert.rejects(
      retry(
        async () => {
          calls++;
          throw new Error("again");
        },
        { clock, backoff: [0], attempts: 3 },
      ),
      /again/,
    );
    assert.equal(calls, 3);
  });
  it("turns an abort during the wait into ERR_ABORTED", async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const p = retry(
      async () => {
        throw new Error("down");
      },
      { clock, backoff: [10_000], signal: ac.signal },
    );
    await tick();
    ac.abort();
    await assert.rejects(p, (err) => isFredError(err, "ERR_ABORTED"));
  });
  it("an abort by a deadline keeps the deadline's own code (a timeout is not a shutdown)", async () => {
    const clock = new ManualClock();
    let seen: unknown;
    const p = withDeadline(
      clock,
      5_000,
      undefined,
      () => new FredError("ERR_CHAIN_READ_TIMEOUT", "too slow"),
      (signal) =>
        retry(
          async () => {
            throw new Error("down");
          },
          { clock, backoff: [10_000], signal },
        ).catch((err: unknown) => {
          seen = err;
          throw err;
        }),
    );
    await tick();
    clock.advance(5_000);
    await assert.rejects(p, (err) => isFredError(err, "ERR_CHAIN_READ_TIMEOUT"));
    await tick();
    assert.ok(isFredError(seen, "ERR_CHAIN_READ_TIMEOUT"), `the retry itself ended with ${String(seen)}`);
  });
});

describe("Coalescer", () => {
  it("shares one in-flight load per key, caches for the ttl, never caches a failure", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<number>({ clock, ttlMs: 1000 });
    let loads = 0;
    const load = async () => ++loads;
    const [x, y] = await Promise.all([c.get("k", load), c.get("k", load)]);
    assert.deepEqual([x, y, loads], [1, 1, 1]);
    assert.equal(await c.get("k", load), 1);
    clock.advance(1001);
    assert.equal(await c.get("k", load), 2);
    await assert.rejects(
      c.get("bad", async () => {
        throw new Error("no");
      }),
    );
    assert.equal(await c.get("bad", async () => 7), 7);
  });

  it("clear() drops cached answers, and a load begun before it answers its callers uncached", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<string>({ clock, ttlMs: 1000 });
    assert.equal(await c.get("k", async () => "before"), "before");
    let release!: (v: string) => void;
    const early = c.get("k2", () => new Promise<string>((r) => (release = r)));
    c.clear();
    assert.equal(await c.get("k", async () => "after"), "after", "the cached answer was dropped");
    // A caller after the clear does not join the load begun before it.
    const late = c.get("k2", async () => "fresh");
    release("stale");
    assert.deepEqual([await early, await late], ["stale", "fresh"]);
    assert.equal(await c.get("k2", async () => "again"), "fresh", "only the fresh answer was cached");
  });

  it("takes a per-call ttl for the load that call starts", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<number>({ clock, ttlMs: 1000 });
    let loads = 0;
    await c.get("k", async () => ++loads, 5000);
    clock.advance(4999);
    assert.equal(await c.get("k", async () => ++loads), 1);
    clock.advance(1);
    assert.equal(await c.get("k", async () => ++loads), 2);
  });

  it("invalidate() drops one key's answer and detaches its running load; others stay", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<string>({ clock, ttlMs: 1000 });
    await c.get("other", async () => "kept");
    assert.equal(await c.get("k", async () => "old"), "old");
    c.invalidate("k");
    assert.equal(await c.get("k", async () => "new"), "new", "the cached answer was dropped");
    let release!: (v: string) => void;
    const early = c.get("k2", () => new Promise<string>((r) => (release = r)));
    c.invalidate("k2");
    const late = c.get("k2", async () => "fresh");
    release("stale");
    assert.deepEqual([await early, await late], ["stale", "fresh"], "the late caller started its own load");
    assert.equal(await c.get("k2", async () => "again"), "fresh", "the detached load did not cache");
    assert.equal(await c.get("other", async () => "reloaded"), "kept");
  });

  it("detachRunning() keeps cached answers and detaches every running load", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<string>({ clock, ttlMs: 1000 });
    await c.get("cached", async () => "kept");
    let release!: (v: string) => void;
    const early = c.get("k", () => new Promise<string>((r) => (release = r)));
    c.detachRunning();
    assert.equal(c.inflight, 0);
    const late = c.get("k", async () => "fresh");
    release("stale");
    assert.deepEqual([await early, await late], ["stale", "fresh"], "the late caller started its own load");
    assert.equal(await c.get("k", async () => "again"), "fresh", "the detached load did not cache");
    assert.equal(await c.get("cached", async () => "reloaded"), "kept");
  });

  it("peek() answers a fresh cached value, never an expired one, and starts no load", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<string>({ clock, ttlMs: 1000 });
    assert.equal(c.peek("k"), undefined);
    let release!: (v: string) => void;
    const running = c.get("k", () => new Promise<string>((r) => (release = r)));
    assert.equal(c.peek("k"), undefined, "a running load is not an answer yet");
    release("v");
    await running;
    assert.equal(c.peek("k"), "v");
    clock.advance(1000);
    assert.equal(c.peek("k"), undefined, "expired");
    assert.equal(c.inflight, 0);
  });

  it("passes the key to a ttl function", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<string>({ clock, ttlMs: (_v, key) => (key === "long" ? 10_000 : 1_000) });
    await c.get("long", async () => "a");
    await c.get("short", async () => "b");
    clock.advance(1_001);
    assert.equal(c.peek("long"), "a");
    assert.equal(c.peek("short"), undefined);
  });

  it("chooses each answer's ttl from the answer when given a function", async () => {
    const clock = new ManualClock();
    const c = new Coalescer<string>({ clock, ttlMs: (v) => (v === "settled" ? 10_000 : 1_000) });
    await c.get("a", async () => "settled");
    await c.get("b", async () => "moving");
    clock.advance(1_001);
    assert.equal(await c.get("a", async () => "reloaded"), "settled");
    assert.equal(await c.get("b", async () => "reloaded"), "reloaded");
    clock.advance(9_000);
    assert.equal(await c.get("a", async () => "reloaded"), "reloaded");
  });
});

describe("withDeadline", () => {
  const timeout = () => new Error("too slow");

  it("rejects with the caller's error at the deadline, even if the work ignores its signal", async () => {
    const clock = new ManualClock(0);
    let seen: AbortSignal | undefined;
    const p = withDeadline(clock, 100, new AbortController().signal, timeout, (s) => {
      seen = s;
      return new Promise<never>(() => {});
    });
    clock.advance(99);
    assert.equal(seen?.aborted, false);
    clock.advance(1);
    await assert.rejects(p, /too slow/);
    assert.equal(seen?.aborted, true, "the work's signal is aborted too");
  });

  it("passes the parent's abort through and returns what the work returns", async () => {
    const clock = new ManualClock(0);
    assert.equal(await withDeadline(clock, 100, new AbortController().signal, timeout, async () => 7), 7);
    const parent = new AbortController();
    const p = withDeadline(clock, 100, parent.signal, timeout, () => new Promise<never>(() => {}));
    parent.abort(new Error("shutting down"));
    await assert.rejects(p, /shutting down/);
  });

  it("once the work settles, or throws at once, no timer and no listener on the parent stays", async () => {
    const clock = new ManualClock(0);
    const parent = new AbortController();
    assert.equal(await withDeadline(clock, 100, parent.signal, timeout, async () => "done"), "done");
    await assert.rejects(
      withDeadline(clock, 100, parent.signal, timeout, () => {
        throw new Error("refused at once");
      }),
      /refused at once/,
    );
    await assert.rejects(
      withDeadline(clock, 100, parent.signal, timeout, async () => {
        throw new Error("failed later");
      }),
      /failed later/,
    );
    assert.equal(clock.pendingTimers, 0);
    assert.equal(getEventListeners(parent.signal, "abort").length, 0);
  });

  it("a parent aborted already stops the work at once, with the parent's reason", async () => {
    const clock = new ManualClock(0);
    const parent = new AbortController();
    parent.abort(new Error("shut down before"));
    let seen: AbortSignal | undefined;
    const p = withDeadline(clock, 100, parent.signal, timeout, (s) => {
      seen = s;
      return new Promise<never>(() => {});
    });
    await assert.rejects(p, /shut down before/);
    assert.equal(seen?.aborted, true);
    assert.equal(clock.pendingTimers, 0);
  });

  it("without a parent only the deadline stops the work", async () => {
    const clock = new ManualClock(0);
    const p = withDeadline(clock, 100, undefined, timeout, () => new Promise<never>(() => {}));
    clock.advance(100);
    await assert.rejects(p, /too slow/);
    assert.equal(clock.pendingTimers, 0, "the deadline's timer is gone once it fired");
  });
});

describe("withStallDeadline", () => {
  const timeout = () => new Error("stalled");

  it("a read that keeps progressing outlives the deadline; one that stops is abandoned `ms` after its last progress", async () => {
    const clock = new ManualClock(0);
    let step!: () => void;
    let finish!: (v: string) => void;
    const p = withStallDeadline(clock, 100, new AbortController().signal, timeout, (_s, progressed) => {
      step = progressed;
      return new Promise<string>((resolve) => {
        finish = resolve;
      });
    });
    // Ten parts, 90 ms apart: 900 ms in all, never 100 ms without progress.
    for (let i = 0; i < 10; i++) {
      clock.advance(90);
      step();
    }
    finish("all pages");
    assert.equal(await p, "all pages");

    let seen: AbortSignal | undefined;
    let progress!: () => void;
    const stalled = withStallDeadline(clock, 100, new AbortController().signal, timeout, (s, progressed) => {
      seen = s;
      progress = progressed;
      return new Promise<never>(() => {});
    });
    clock.advance(60);
    progress();
    clock.advance(99);
    assert.equal(seen?.aborted, false, "100 ms from the last progress, not from the start");
    clock.advance(1);
    await assert.rejects(stalled, /stalled/);
    assert.equal(seen?.aborted, true);
    progress(); // progress after the deadline changes nothing
  });
});

describe("RateBuckets", () => {
  it("consume refuses past the bucket; spend goes into debt and says how long it takes to pay", () => {
    const clock = new ManualClock(0);
    const bytes = new RateBuckets(1000, 1000, clock);
    assert.equal(bytes.consume("a", 600).allowed, true);
    assert.equal(bytes.consume("a", 600).allowed, false, "400 left: refused, nothing spent");
    assert.equal(bytes.spend("a", 600), 200, "200 in debt at 1000/s: 200 ms");
    assert.equal(bytes.spend("a", 100), 300, "deeper in debt");
    clock.advance(300);
    assert.equal(bytes.spend("a", 0), 0, "paid");
    clock.advance(5_000);
    assert.equal(bytes.spend("a", 1000), 0, "refilled to the burst, never past it");
    assert.equal(bytes.spend("a", 1), 1);
    assert.equal(bytes.spend("b", 999), 0, "keys are separate");
  });
});

describe("PeriodicPass", () => {
  it("runSoon runs now when idle, once more right after a run under way (not at the interval), and nothing once stopped", async () => {
    const clock = new ManualClock();
    let runs = 0;
    let finish: () => void = () => {};
    const pass = new PeriodicPass({
      clock,
      intervalMs: () => 60_000,
      run: () => {
        runs++;
        return new Promise<void>((r) => (finish = r));
      },
      onError: () => {},
    });
    pass.start();
    assert.equal(runs, 1);
    // Asked twice during the run: one more run, right after it.
    pass.runSoon();
    pass.runSoon();
    finish();
    await tick();
    clock.advance(0);
    assert.equal(runs, 2, "the run asked for during the first follows it at once");
    finish();
    await tick();
    clock.advance(59_999);
    assert.equal(runs, 2, "then the interval");
    // Idle: a run at once.
    pass.runSoon();
    assert.equal(runs, 3);
    finish();
    await tick();
    const stopped = pass.stop();
    await stopped;
    pass.runSoon();
    clock.advance(120_000);
    assert.equal(runs, 3, "nothing runs after stop");
  });
});
