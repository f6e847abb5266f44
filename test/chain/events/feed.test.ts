import assert from "node:assert/strict";
import { once } from "node:events";
import { afterEach, describe, it } from "node:test";
import { EventFeed, reconnectBackoff } from "../../../src/chain/events/feed.ts";
import type { FeedItem } from "../../../src/chain/events/types.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { until } from "../../support/index.ts";
import { type FakeComet, startFakeComet } from "./fake-comet.ts";
import {
  blockEventsFrame,
  createdEvents,
  ev,
  headerFrame,
  leaseUuid,
  OTHER_PROVIDER,
  PROVIDER,
  TENANT,
  txFrame,
} from "./frames.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function feedFor(
  fake: FakeComet,
  clock: ManualClock,
  extra: Partial<ConstructorParameters<typeof EventFeed>[0]> = {},
) {
  const feed = new EventFeed({
    url: fake.url,
    providerUuid: PROVIDER,
    clock,
    random: () => 0.5,
    pingIntervalMs: 30_000,
    stallTimeoutMs: 10_000,
    ...extra,
  });
  cleanups.push(() => feed.stop());
  return feed;
}

function drain(poll: () => FeedItem | undefined): string[] {
  const out: string[] = [];
  for (let i = poll(); i !== undefined; i = poll())
    out.push(i.type === "event" ? `${i.event.kind}:${i.event.leaseUuid}` : `resync:${i.reason}`);
  return out;
}

describe("event feed (websocket)", () => {
  it("subscribes with Fred's queries and delivers typed events for our provider only", async () => {
    const fake = await startFakeComet();
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = feedFor(fake, clock);
    const c = feed.subscribe("lifecycle");
    feed.start();
    await until(() => fake.subscriptions.length === 5, "5 subscriptions");
    assert.deepEqual(
      fake.subscriptions.map((s) => s.query),
      [
        `tm.event='Tx' AND lease_created.provider_uuid='${PROVIDER}'`,
        "tm.event='Tx' AND lease_auto_closed.reason='credit_exhausted'",
        `tm.event='Tx' AND lease_closed.provider_uuid='${PROVIDER}'`,
        "tm.event='NewBlockEvents'",
        `tm.event='Tx' AND lease_cancelled.provider_uuid='${PROVIDER}'`,
      ],
    );
    fake.push(txFrame(1, "q", 10, [...createdEvents(2), ...createdEvents(1, OTHER_PROVIDER, 5)]));
    fake.push("garbage that is not json");
    fake.push(
      blockEventsFrame(4, 11, [
        ev("lease_expired", {
          lease_uuid: leaseUuid(7),
          tenant: TENANT,
          provider_uuid: PROVIDER,
          reason: "pending_timeout",
          mode: "EndBlock",
        }),
      ]),
    );
    await until(() => feed.metrics().lastHeight === 11, "height 11");
    assert.deepEqual(
      drain(() => c.poll()),
      [`lease_created:${leaseUuid(0)}`, `lease_created:${leaseUuid(1)}`, `lease_expired:${leaseUuid(7)}`],
    );
    const m = feed.metrics();
    assert.equal(m.malformed, 1);
    assert.equal(m.eventsPublished, 3);
    assert.equal(m.reconnects, 0);
  });

  it("heartbeat: no new block within the window → reconnect with backoff, then resync", async () => {
    const fake = await startFakeComet();
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = feedFor(fake, clock);
    const c = feed.subscribe("lifecycle");
    const backoffs: number[] = [];
    feed.on("backoff", (d: number) => backoffs.push(d));
    feed.start();
    await feed.whenState("live");
    fake.push(blockEventsFrame(4, 5, []));
    await until(() => feed.metrics().lastHeight === 5, "height 5");
    clock.advance(9_999);
    assert.equal(feed.state, "live");
    // Blocks keep the feed alive; silence beyond 10 × 1 s kills it although the socket is open.
    fake.push(blockEventsFrame(4, 6, []));
    await until(() => feed.metrics().lastHeight === 6, "height 6");
    clock.advance(9_999);
    assert.equal(feed.state, "live");
    clock.advance(2);
    await feed.whenState("backoff");
    assert.equal(feed.metrics().heartbeatTimeouts, 1);
    assert.deepEqual(backoffs, [1000]);
    clock.advance(1000);
    await feed.whenState("live");
    assert.equal(feed.metrics().reconnects, 1);
    assert.equal(fake.connections, 2);
    assert.deepEqual(
      drain(() => c.poll()),
      ["resync:reconnect"],
    );
  });

  it("is a block signal: live() follows the state, onBlock hears each new height, onLeaseEvent each lease, onStateChange each state, until unsubscribed", async () => {
    const fake = await startFakeComet();
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = feedFor(fake, clock);
    assert.equal(feed.live(), false, "not live before it connects");
    const heard: number[] = [];
    const unsubscribe = feed.onBlock(() => heard.push(feed.metrics().lastHeight));
    const leases: string[] = [];
    const stopLeases = feed.onLeaseEvent((uuid) => leases.push(uuid));
    const states: boolean[] = [];
    const stopStates = feed.onStateChange(() => states.push(feed.live()));
    feed.start();
    await feed.whenState("live");
    assert.equal(feed.live(), true);
    assert.equal(states.at(-1), true, "the change to live was heard");
    fake.push(txFrame(1, "q", 4, [...createdEvents(2), ...createdEvents(1, OTHER_PROVIDER, 5)]));
    await until(() => leases.length === 2, "two lease events");
    assert.deepEqual(leases, [leaseUuid(0), leaseUuid(1)], "only the events published for our provider");
    stopLeases();
    fake.push(blockEventsFrame(4, 5, []));
    fake.push(blockEventsFrame(4, 5, [])); // the same height again: not a new block
    fake.push(blockEventsFrame(4, 6, []));
    await until(() => feed.metrics().lastHeight === 6, "height 6");
    assert.deepEqual(heard, [4, 5, 6], "a tx's height is a new block too");
    unsubscribe();
    fake.push(blockEventsFrame(4, 7, []));
    await until(() => feed.metrics().lastHeight === 7, "height 7");
    assert.deepEqual(heard, [4, 5, 6], "nothing after the unsubscribe");
    fake.push(txFrame(1, "q", 8, createdEvents(1)));
    await until(() => feed.metrics().lastHeight === 8, "height 8");
    assert.deepEqual(leases, [leaseUuid(0), leaseUuid(1)], "no lease event after its unsubscribe");
    clock.advance(10_001); // no block within the heartbeat window
    await feed.whenState("backoff");
    assert.equal(feed.live(), false);
    assert.equal(states.at(-1), false, "the change out of live was heard");
    stopStates();
  });

  it("backoff doubles to the cap while the node is down, resets after a live connection", async () => {
    const fake = await startFakeComet();
    const port = Number(new URL(fake.url).port);
    await fake.close();
    const clock = new ManualClock();
    const feed = feedFor(fake, clock, { reconnectInitialMs: 1000, reconnectMaxMs: 5000 });
    let next = once(feed, "backoff");
    feed.start();
    for (const expected of [1000, 2000, 4000, 5000, 5000]) {
      assert.deepEqual(await next, [expected], `backoff ${expected}`);
      assert.equal(feed.state, "backoff");
      next = once(feed, "backoff");
      clock.advance(expected);
    }
    assert.deepEqual(await next, [5000], "next attempt, still capped");
    const again = await startFakeComet({ port });
    cleanups.push(() => again.close());
    clock.advance(5000);
    await feed.whenState("live");
    const dropped = once(feed, "backoff");
    again.dropAll();
    assert.deepEqual(await dropped, [1000], "reset after a live connection");
    assert.ok(
      [0, 0.999].every((r) => {
        const d = reconnectBackoff(1000, 5000, () => r).next();
        return d >= 750 && d <= 1250;
      }),
    );
  });

  it("read deadline: a socket that answers no pings is dropped after 2 ping intervals", async () => {
    const fake = await startFakeComet({ autoPong: false });
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = feedFor(fake, clock, { pingIntervalMs: 1000, stallTimeoutMs: 1_000_000 });
    feed.start();
    await until(() => fake.subscriptions.length === 5, "subscribed");
    clock.advance(1000);
    assert.equal(feed.state, "live");
    clock.advance(1000);
    await feed.whenState("backoff");
    assert.equal(feed.metrics().readTimeouts, 1);
  });

  it("falls back to NewBlockHeader + block_results when NewBlockEvents is refused; back-fills gaps", async () => {
    const fake = await startFakeComet({ refuse: (q) => q.includes("NewBlockEvents") });
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const fetched: number[] = [];
    const feed = feedFor(fake, clock, {
      fetchBlockEvents: async (height) => {
        fetched.push(height);
        return height === 3 || height === 6
          ? [
              ev("lease_expired", {
                lease_uuid: leaseUuid(height),
                tenant: TENANT,
                provider_uuid: PROVIDER,
                reason: "pending_timeout",
              }),
            ]
          : [];
      },
    });
    const c = feed.subscribe("lifecycle");
    feed.start();
    await until(
      () => fake.subscriptions.some((s) => s.query === "tm.event='NewBlockHeader'"),
      "header fallback",
    );
    fake.push(headerFrame(5, 2));
    fake.push(headerFrame(5, 3));
    await until(() => fetched.includes(3) && c.queued > 0, "block 3 fetched");
    fake.push(headerFrame(5, 7)); // heights 4..6 were never seen: back-filled
    await until(() => fetched.includes(6) && fetched.includes(7), "gap filled");
    assert.deepEqual(
      drain(() => c.poll()),
      [`lease_expired:${leaseUuid(3)}`, `lease_expired:${leaseUuid(6)}`],
    );
    assert.deepEqual(
      [...fetched].sort((a, b) => a - b),
      [2, 3, 4, 5, 6, 7],
    );
  });

  it("after a restart from an older height, new blocks still count for the heartbeat", async () => {
    const fake = await startFakeComet();
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = feedFor(fake, clock);
    feed.start();
    await feed.whenState("live");
    fake.push(blockEventsFrame(4, 10, []));
    await until(() => feed.metrics().lastHeight === 10, "height 10");
    fake.dropAll();
    await feed.whenState("backoff");
    clock.advance(1000);
    await feed.whenState("live");
    assert.equal(feed.metrics().reconnects, 1);
    // The node lost two blocks in its crash: heights 8, 9, 10 come again, 6 s apart
    // (the heartbeat window is 10 s, so only re-arming on each of them keeps the feed up).
    for (const h of [8, 9, 10]) {
      const frames = feed.metrics().framesReceived;
      fake.push(blockEventsFrame(4, h, []));
      await until(() => feed.metrics().framesReceived > frames, `frame ${h}`);
      clock.advance(6_000);
    }
    assert.equal(feed.state, "live");
    assert.equal(feed.metrics().heartbeatTimeouts, 0);
    assert.equal(feed.metrics().lastHeight, 10);
  });

  it("whenState: resolves at once in that state, rejects when the feed stops first or the wait aborts", async () => {
    const fake = await startFakeComet();
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = feedFor(fake, clock);
    const lived = once(feed, "live");
    feed.start();
    await feed.whenState("live");
    assert.deepEqual(await lived, [{ reconnect: false }]);
    await feed.whenState("live");
    const aborted = new AbortController();
    const waiting = feed.whenState("backoff", aborted.signal);
    aborted.abort();
    await assert.rejects(waiting, (e) => isFredError(e, "ERR_ABORTED"));
    const never = feed.whenState("backoff");
    await feed.stop();
    await assert.rejects(never, (e) => isFredError(e, "ERR_SHUTTING_DOWN"));
    await assert.rejects(feed.whenState("live"), (e) => isFredError(e, "ERR_SHUTTING_DOWN"));
  });

  it("rejects a provider UUID that is not canonical (it is interpolated into queries)", () => {
    assert.throws(
      () => new EventFeed({ url: "ws://127.0.0.1:1/websocket", providerUuid: "x' OR '1'='1" }),
      /provider_uuid/,
    );
  });
});
