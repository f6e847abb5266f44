import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import {
  CLOSE_RETRY_ATTEMPTS,
  CLOSE_RETRY_HINTS,
  CLOSE_RETRY_WORKERS,
  CloseRetries,
} from "../../../src/provider/lifecycle/close-retries.ts";

/**
 * The close-retry queue on a manual clock, with a scripted close: the reference's bounds
 * (4 at once, 1,024 leases, coalesced hints), doubling waits, a bounded number of tries.
 */
const silent = createLogger("close-retries-test", "silent");
const flush = () => new Promise((r) => setImmediate(r));
const backoff = { initialMs: 1_000, maxMs: 8_000 };

function harness(answer: (lease: string, n: number) => boolean | Promise<boolean>) {
  const clock = new ManualClock(0);
  const tries = new Map<string, number[]>();
  let dropped = 0;
  const q = new CloseRetries({
    clock,
    logger: silent,
    backoff,
    onDropped: () => dropped++,
    close: async (lease) => {
      const at = [...(tries.get(lease) ?? []), clock.now()];
      tries.set(lease, at);
      return answer(lease, at.length);
    },
  });
  /** Advances the clock in steps of `ms`, letting the tries run between them. */
  const run = async (totalMs: number, ms = 500) => {
    for (let t = 0; t < totalMs; t += ms) {
      clock.advance(ms);
      await flush();
    }
  };
  return { q, tries, run, dropped: () => dropped };
}

describe("close retries", () => {
  it("waits, then retries with doubling delays until the close is confirmed", async () => {
    const h = harness((_l, n) => n === 3);
    assert.equal(h.q.hint("a"), true);
    await h.run(20_000);
    assert.deepEqual(h.tries.get("a"), [1_000, 3_000, 7_000], "1 s, then 2 s, then 4 s later");
    assert.equal(h.q.size, 0, "forgotten once confirmed");
  });

  it("gives up after its tries (the sweep has it), and a thrown close counts as a failed try", async () => {
    const h = harness((_l, n) => {
      if (n === 2) throw new Error("backend exploded");
      return false;
    });
    h.q.hint("a");
    await h.run(200_000);
    assert.equal(h.tries.get("a")?.length, CLOSE_RETRY_ATTEMPTS);
    assert.equal(h.q.size, 0);
  });

  it("coalesces a hint for a lease it already holds", async () => {
    const h = harness(() => true);
    assert.equal(h.q.hint("a"), true);
    assert.equal(h.q.hint("a"), true);
    assert.equal(h.q.size, 1);
    await h.run(2_000);
    assert.equal(h.tries.get("a")?.length, 1, "one close for both hints");
  });

  it(`holds at most ${CLOSE_RETRY_HINTS} leases; one more is dropped and counted`, async () => {
    const h = harness(() => true);
    for (let i = 0; i < CLOSE_RETRY_HINTS; i++) assert.equal(h.q.hint(`l${i}`), true);
    assert.equal(h.q.hint("one-too-many"), false);
    assert.equal(h.dropped(), 1);
    assert.equal(h.q.size, CLOSE_RETRY_HINTS);
    await h.run(2_000, 1_000);
    await h.run(5_000, 100);
    assert.equal(h.q.size, 0, "all closed");
    assert.equal(h.q.hint("one-too-many"), true, "room again");
  });

  it(`runs at most ${CLOSE_RETRY_WORKERS} closes at once, and a waiting lease holds no worker`, async () => {
    const clock = new ManualClock(0);
    let running = 0;
    let peak = 0;
    const gates: (() => void)[] = [];
    const q = new CloseRetries({
      clock,
      logger: silent,
      backoff,
      close: async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((r) => gates.push(r));
        running--;
        return true;
      },
    });
    for (let i = 0; i < 10; i++) q.hint(`l${i}`);
    clock.advance(1_000);
    await flush();
    assert.equal(running, CLOSE_RETRY_WORKERS);
    while (gates.length > 0) {
      for (const g of gates.splice(0)) g();
      await flush();
      await flush();
    }
    assert.equal(peak, CLOSE_RETRY_WORKERS);
    assert.equal(q.size, 0);
  });

  it("stop forgets everything and takes no more hints", async () => {
    const h = harness(() => false);
    h.q.hint("a");
    h.q.stop();
    await h.run(10_000);
    assert.equal(h.tries.get("a"), undefined);
    assert.equal(h.q.hint("b"), false);
  });
});
