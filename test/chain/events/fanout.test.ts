import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FanOut } from "../../../src/chain/events/fanout.ts";
import type { FeedItem, LeaseEvent } from "../../../src/chain/events/types.ts";
import { leaseUuid, PROVIDER, TENANT } from "./frames.ts";

function event(i: number): LeaseEvent {
  return {
    kind: "lease_created",
    leaseUuid: leaseUuid(i),
    providerUuid: PROVIDER,
    tenant: TENANT,
    height: i,
    txHash: undefined,
    reason: undefined,
  };
}

function drain(items: () => FeedItem | undefined): string[] {
  const out: string[] = [];
  for (let item = items(); item !== undefined; item = items()) {
    out.push(item.type === "event" ? String(item.event.height) : `resync:${item.reason}`);
  }
  return out;
}

describe("fan-out", () => {
  it("a slow consumer drops (counted) and then gets a resync; a fast one is unaffected", () => {
    const fan = new FanOut();
    const slow = fan.subscribe("slow", 3);
    const fast = fan.subscribe("fast", 100);
    for (let i = 1; i <= 6; i++) fan.publish(event(i));
    assert.equal(slow.dropped, 3);
    assert.equal(fan.droppedTotal, 3);
    assert.deepEqual(
      drain(() => fast.poll()),
      ["1", "2", "3", "4", "5", "6"],
    );
    assert.deepEqual(
      drain(() => slow.poll()),
      ["1", "2", "3", "resync:overflow"],
    );
    fan.publish(event(7));
    assert.deepEqual(
      drain(() => slow.poll()),
      ["7"],
    );
  });

  it("the owed resync is queued ahead of the next event once there is room", () => {
    const fan = new FanOut();
    const c = fan.subscribe("c", 2);
    fan.publish(event(1));
    fan.publish(event(2));
    fan.publish(event(3)); // dropped
    assert.equal(c.poll()?.type, "event");
    assert.equal(c.poll()?.type, "event");
    fan.publish(event(4));
    assert.deepEqual(
      drain(() => c.poll()),
      ["resync:overflow", "4"],
    );
  });

  it("waiting readers are woken; resyncAll reaches every consumer; close ends iteration", async () => {
    const fan = new FanOut();
    const a = fan.subscribe("a", 10);
    const b = fan.subscribe("b", 10);
    const pending = a.next();
    fan.publish(event(9));
    const got = await pending;
    assert.equal(got?.type === "event" ? got.event.height : -1, 9);
    fan.resyncAll("reconnect");
    assert.deepEqual(
      drain(() => a.poll()),
      ["resync:reconnect"],
    );
    assert.deepEqual(
      drain(() => b.poll()),
      ["9", "resync:reconnect"],
    );
    const seen: string[] = [];
    const loop = (async () => {
      for await (const item of b) seen.push(item.type);
    })();
    fan.publish(event(10));
    await new Promise((r) => setImmediate(r));
    b.close();
    await loop;
    assert.deepEqual(seen, ["event"]);
    assert.equal(fan.consumers().length, 1);
    assert.deepEqual(
      drain(() => a.poll()),
      ["10"],
    );
    const aborter = new AbortController();
    const waiting = a.next(aborter.signal);
    aborter.abort(new Error("bye"));
    await assert.rejects(waiting, /bye/);
    assert.throws(() => fan.subscribe("bad", 0), RangeError);
  });
});
