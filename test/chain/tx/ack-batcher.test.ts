import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LeaseOutcome } from "../../../src/chain/port.ts";
import { AckBatcher } from "../../../src/chain/tx/ack-batcher.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError, isFredError } from "../../../src/core/errors.ts";

function uuid(i: number): string {
  return `0190f3a2-7c1e-7000-8000-${i.toString(16).padStart(12, "0")}`;
}

type Call = {
  kind: "acknowledge" | "reject";
  lane: number | undefined;
  uuids: readonly string[];
  reason?: string;
  finish: (o?: LeaseOutcome[]) => void;
  fail: (e: Error) => void;
};

/** A chain whose lease txs complete only when the test says so. */
function controlledChain() {
  const calls: Call[] = [];
  const send = (kind: Call["kind"], uuids: readonly string[], lane: number | undefined, reason?: string) =>
    new Promise<LeaseOutcome[]>((resolve, reject) => {
      calls.push({
        kind,
        lane,
        uuids,
        ...(reason === undefined ? {} : { reason }),
        finish: (o) =>
          resolve(
            o ??
              uuids.map((leaseUuid) => ({
                leaseUuid,
                status: kind === "acknowledge" ? "acknowledged" : "rejected",
              })),
          ),
        fail: reject,
      });
    });
  const chain = {
    acknowledge: (uuids: readonly string[], _signal?: AbortSignal, lane?: number) =>
      send("acknowledge", uuids, lane),
    reject: (uuids: readonly string[], reason: string, _signal?: AbortSignal, lane?: number) =>
      send("reject", uuids, lane, reason),
  };
  return { calls, chain };
}

const tick = () => new Promise((r) => setImmediate(r));
const unavailable = () => new FredError("ERR_CHAIN_UNAVAILABLE", "node down", { retryable: true });

describe("ack batcher", () => {
  it("flushes on size immediately and on time after maxWait", async () => {
    const clock = new ManualClock();
    const { calls, chain } = controlledChain();
    const b = new AckBatcher({ chain, clock, lanes: 2, maxBatch: 3, maxWaitMs: 500 });
    const first = [1, 2, 3].map((i) => b.submit({ kind: "acknowledge", leaseUuid: uuid(i) }));
    assert.equal(calls.length, 1, "size flush without waiting");
    assert.deepEqual(calls[0]?.uuids, [uuid(1), uuid(2), uuid(3)]);
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
    const { calls, chain } = controlledChain();
    const b = new AckBatcher({ chain, clock, lanes: 1, maxBatch: 2, maxWaitMs: 100 });
    const all = [1, 2, 3, 4, 5].map((i) => b.submit({ kind: "acknowledge", leaseUuid: uuid(i) }));
    assert.equal(calls.length, 1);
    clock.advance(1000);
    assert.equal(calls.length, 1, "lane busy: nothing else in flight");
    calls[0]?.finish();
    await tick();
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[1]?.uuids, [uuid(3), uuid(4)]);
    calls[1]?.finish();
    await tick();
    assert.equal(calls.length, 3, "overdue remainder flushed when the lane frees");
    calls[2]?.finish();
    assert.equal((await Promise.all(all)).length, 5);
  });

  it("de-duplicates a lease while queued, reports per-lease failures, refuses after close", async () => {
    const clock = new ManualClock();
    const { calls, chain } = controlledChain();
    const b = new AckBatcher({ chain, clock, lanes: 1, maxBatch: 10, maxWaitMs: 50 });
    const a = b.submit({ kind: "acknowledge", leaseUuid: uuid(1) });
    const again = b.submit({ kind: "acknowledge", leaseUuid: uuid(1) });
    const other = b.submit({ kind: "acknowledge", leaseUuid: uuid(2) });
    clock.advance(50);
    assert.equal(calls[0]?.uuids.length, 2);
    // The chain reports only lease 1: lease 2 must still get an outcome (failed).
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
    assert.equal(calls.length, 2, "a failure that is not retryable is not resubmitted");
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
      () => new AckBatcher({ chain, clock, lanes: 0 }),
      (e) => isFredError(e, "ERR_CONFIG"),
    );
  });

  it("groups a batch once: acknowledgements in one call, rejections one call per reason, all on its lane", async () => {
    const clock = new ManualClock();
    const { calls, chain } = controlledChain();
    const b = new AckBatcher({ chain, clock, lanes: 1, maxBatch: 5, maxWaitMs: 500 });
    const outs = [
      b.submit({ kind: "acknowledge", leaseUuid: uuid(1) }),
      b.submit({ kind: "reject", leaseUuid: uuid(2), reason: "image pull failed" }),
      b.submit({ kind: "acknowledge", leaseUuid: uuid(3) }),
      b.submit({ kind: "reject", leaseUuid: uuid(4), reason: "provisioning failed" }),
      b.submit({ kind: "reject", leaseUuid: uuid(5), reason: "image pull failed" }),
    ];
    // One call at a time on the lane: the next group goes once the previous tx is done.
    for (let i = 0; i < 3; i++) {
      await tick();
      assert.equal(calls.length, i + 1, "one tx in flight on the lane");
      calls[i]?.finish();
    }
    assert.deepEqual(
      calls.map((c) => [c.kind, c.lane, c.uuids, c.reason]),
      [
        ["acknowledge", 0, [uuid(1), uuid(3)], undefined],
        ["reject", 0, [uuid(2), uuid(5)], "image pull failed"],
        ["reject", 0, [uuid(4)], "provisioning failed"],
      ],
    );
    assert.deepEqual(
      (await Promise.all(outs)).map((o) => o.status),
      ["acknowledged", "rejected", "acknowledged", "rejected", "rejected"],
    );
  });

  it("resubmits a retryable failure after 2 s, 4 s and 6 s, then keeps the last failed outcome", async () => {
    const clock = new ManualClock();
    const { calls, chain } = controlledChain();
    const b = new AckBatcher({ chain, clock, lanes: 1, maxBatch: 1, maxWaitMs: 0 });
    const out = b.submit({ kind: "acknowledge", leaseUuid: uuid(1) });
    const sentAt: number[] = [];
    for (const wait of [2_000, 4_000, 6_000]) {
      sentAt.push(clock.now());
      calls.at(-1)?.fail(unavailable());
      while (clock.pendingTimers === 0) await tick();
      clock.advance(wait - 1);
      await tick();
      assert.equal(calls.length, sentAt.length, `not resubmitted before ${wait} ms`);
      clock.advance(1);
      await tick();
      assert.equal(calls.length, sentAt.length + 1, `resubmitted after ${wait} ms`);
      // A submit meanwhile shares the retrying request instead of sending a second tx.
      assert.equal(b.submit({ kind: "acknowledge", leaseUuid: uuid(1) }), out);
    }
    calls.at(-1)?.fail(unavailable());
    const last = await out;
    assert.equal(last.status, "failed");
    assert.ok(isFredError(last.error, "ERR_CHAIN_UNAVAILABLE"));
    assert.equal(calls.length, 4, "one try and three resubmissions");
  });

  it("a resubmission that succeeds settles the lease; close during a wait keeps the failure", async () => {
    const clock = new ManualClock();
    const { calls, chain } = controlledChain();
    const b = new AckBatcher({ chain, clock, lanes: 1, maxBatch: 1, maxWaitMs: 0 });
    const ok = b.submit({ kind: "acknowledge", leaseUuid: uuid(1) });
    calls[0]?.fail(unavailable());
    while (clock.pendingTimers === 0) await tick();
    clock.advance(2_000);
    await tick();
    calls[1]?.finish();
    assert.equal((await ok).status, "acknowledged");

    const waiting = b.submit({ kind: "reject", leaseUuid: uuid(2), reason: "provisioning failed" });
    calls[2]?.fail(unavailable());
    while (clock.pendingTimers === 0) await tick();
    await b.close();
    const kept = await waiting;
    assert.equal(kept.status, "failed");
    assert.ok(isFredError(kept.error, "ERR_CHAIN_UNAVAILABLE"));
    assert.equal(calls.length, 3, "nothing resubmitted after close");
    assert.equal(clock.pendingTimers, 0);
  });
});
