import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LeaseOutcome } from "../../../src/chain/port.ts";
import { AckBatcher, type AckRequest } from "../../../src/chain/tx/ack-batcher.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";

function uuid(i: number): string {
  return `0190f3a2-7c1e-7000-8000-${i.toString(16).padStart(12, "0")}`;
}

/** A flush function whose txs complete only when the test says so. */
function controlledFlush() {
  const calls: {
    lane: number;
    batch: readonly AckRequest[];
    finish: (o?: LeaseOutcome[]) => void;
    fail: (e: Error) => void;
  }[] = [];
  const flush = (lane: number, batch: readonly AckRequest[]) =>
    new Promise<LeaseOutcome[]>((resolve, reject) => {
      calls.push({
        lane,
        batch,
        finish: (o) =>
          resolve(
            o ??
              batch.map((r) => ({
                leaseUuid: r.leaseUuid,
                status: r.kind === "acknowledge" ? "acknowledged" : "rejected",
              })),
          ),
        fail: reject,
      });
    });
  return { calls, flush };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("ack batcher", () => {
  it("flushes on size immediately and on time after maxWait", async () => {
    const clock = new ManualClock();
    const { calls, flush } = controlledFlush();
    const b = new AckBatcher({ clock, flush, lanes: 2, maxBatch: 3, maxWaitMs: 500 });
    const first = [1, 2, 3].map((i) => b.submit({ kind: "acknowledge", leaseUuid: uuid(i) }));
    assert.equal(calls.length, 1, "size flush without waiting");
    assert.deepEqual(
      calls[0]?.batch.map((r) => r.leaseUuid),
      [uuid(1), uuid(2), uuid(3)],
    );
    const late = b.submit({ kind: "reject", leaseUuid: uuid(4), reason: "bad manifest" });
    clock.advance(499);
    assert.equal(calls.length, 1);
    clock.advance(1);
    assert.equal(calls.length, 2, "time flush at 500 ms");
    assert.equal(calls[1]?.lane, 1);
    calls[0]?.finish();
    calls[1]?.finish();
    assert.deepEqual(
      (await Promise.all(first)).map((o) => o.status),
      ["acknowledged", "acknowledged", "acknowledged"],
    );
    assert.equal((await late).status, "rejected");
    assert.equal(b.stats.sizeFlushes, 1);
    assert.equal(b.stats.timeFlushes, 1);
  });

  it("keeps one tx in flight per lane; a freed lane takes an overdue batch at once", async () => {
    const clock = new ManualClock();
    const { calls, flush } = controlledFlush();
    const b = new AckBatcher({ clock, flush, lanes: 1, maxBatch: 2, maxWaitMs: 100 });
    const all = [1, 2, 3, 4, 5].map((i) => b.submit({ kind: "acknowledge", leaseUuid: uuid(i) }));
    assert.equal(calls.length, 1);
    clock.advance(1000);
    assert.equal(calls.length, 1, "lane busy: nothing else in flight");
    calls[0]?.finish();
    await tick();
    assert.equal(calls.length, 2);
    assert.deepEqual(
      calls[1]?.batch.map((r) => r.leaseUuid),
      [uuid(3), uuid(4)],
    );
    calls[1]?.finish();
    await tick();
    assert.equal(calls.length, 3, "overdue remainder flushed when the lane frees");
    calls[2]?.finish();
    assert.equal((await Promise.all(all)).length, 5);
  });

  it("de-duplicates a lease while queued, reports per-lease failures, refuses after close", async () => {
    const clock = new ManualClock();
    const { calls, flush } = controlledFlush();
    const b = new AckBatcher({ clock, flush, lanes: 1, maxBatch: 10, maxWaitMs: 50 });
    const a = b.submit({ kind: "acknowledge", leaseUuid: uuid(1) });
    const again = b.submit({ kind: "acknowledge", leaseUuid: uuid(1) });
    const other = b.submit({ kind: "acknowledge", leaseUuid: uuid(2) });
    clock.advance(50);
    assert.equal(calls[0]?.batch.length, 2);
    // The flush reports only lease 1: lease 2 must still get an outcome (failed).
    calls[0]?.finish([{ leaseUuid: uuid(1), status: "already_done" }]);
    assert.equal((await a).status, "already_done");
    assert.equal(await again, await a);
    const o2 = await other;
    assert.equal(o2.status, "failed");
    assert.ok(isFredError(o2.error, "ERR_CHAIN_TX"));
    const boom = b.submit({ kind: "acknowledge", leaseUuid: uuid(3) });
    clock.advance(50);
    calls[1]?.fail(new Error("node unreachable"));
    const failed = await boom;
    assert.equal(failed.status, "failed");
    assert.match(failed.error?.message ?? "", /unreachable/);
    const pending = b.submit({ kind: "acknowledge", leaseUuid: uuid(4) });
    const closing = b.close();
    await tick();
    assert.equal(calls.length, 3, "close flushes what is queued without waiting for the timer");
    calls[2]?.finish();
    await closing;
    assert.equal((await pending).status, "acknowledged");
    await assert.rejects(b.submit({ kind: "acknowledge", leaseUuid: uuid(5) }), (e) =>
      isFredError(e, "ERR_SHUTTING_DOWN"),
    );
    assert.throws(
      () => new AckBatcher({ clock, flush, lanes: 0 }),
      (e) => isFredError(e, "ERR_CONFIG"),
    );
  });
});
