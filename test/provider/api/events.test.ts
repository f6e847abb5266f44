import assert from "node:assert/strict";
import { once } from "node:events";
import { afterEach, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { EventHub } from "../../../src/provider/api/event-hub.ts";
import { until } from "../../support/index.ts";
import { sample } from "../../support/metrics.ts";
import { Harness } from "./harness.ts";
import { call } from "./tenant-client.ts";
import { type HttpRefusal, stalledSubscriber, WsClient, wsUrl } from "./ws-client.ts";

/**
 * GET /v1/leases/{uuid}/events with real `ws` clients against the tenant API on a real
 * listener. The clock is stepped, so pings, pong deadlines and the one-hour lifetime are
 * driven exactly; frames and closes are awaited, never slept for.
 */
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const OTHER = "0190f3a2-7c1e-7000-8000-000000000002";
let h: Harness;

beforeEach(async () => {
  h = await new Harness().start({ events: { perLease: 10, total: 12, bufferSize: 4 } });
  h.lease(LEASE);
});

afterEach(async () => {
  await h.close();
});

const path = (lease: string, query = "") => `/v1/leases/${lease}/events${query}`;

function subscribe(query = "", token = h.token(LEASE), lease = LEASE, opts = {}): Promise<WsClient> {
  const sep = query === "" ? "?" : "&";
  return new WsClient(
    wsUrl(h.url, `${path(lease, query)}${sep}token=${encodeURIComponent(token)}`),
    opts,
  ).open();
}

describe("lease event stream", () => {
  it("refuses before the upgrade with plain HTTP answers", async () => {
    const refused = async (url: string, headers: Record<string, string> = {}) => {
      try {
        await new WsClient(wsUrl(h.url, url), { headers }).open();
        return 101;
      } catch (err) {
        return (err as HttpRefusal).status;
      }
    };
    assert.equal(await refused(path("nope")), 400);
    assert.equal(await refused(path(LEASE)), 401);
    assert.equal(await refused(path(LEASE, "?token=garbage")), 401);
    assert.equal(await refused(path(LEASE, `?token=${h.token(LEASE, h.other)}`)), 403);
    assert.equal(await refused(path(OTHER, `?token=${h.token(OTHER)}`)), 404);
    assert.equal(await refused(path(LEASE, `?token=${h.token(LEASE)}&since=x`)), 400);
    assert.equal(await refused(path(LEASE), { authorization: `Bearer ${h.token(LEASE)}` }), 101);
    const plain = await call(h.url, path(LEASE), h.token(LEASE));
    assert.equal(plain.status, 400);
    assert.equal(plain.body.code, 400);
  });

  it("starts with the pinned snapshot, then frames with increasing seq and the chain state", async () => {
    const c = await subscribe();
    const snap = await c.frame(1);
    assert.deepEqual(Object.keys(snap).sort(), ["lease_uuid", "seq", "state", "status", "timestamp", "type"]);
    assert.equal(snap.type, "snapshot");
    assert.equal(snap.status, "unknown", "nothing provisioned yet");
    assert.equal(snap.state, "LEASE_STATE_ACTIVE");
    await h.api.events.publish(LEASE, "provisioning");
    await h.api.events.publish(LEASE, "failed", "container exited\nwith\u0007 code 1");
    const a = await c.frame(2);
    const b = await c.frame(3);
    assert.deepEqual(Object.keys(a).sort(), ["lease_uuid", "seq", "state", "status", "timestamp"]);
    assert.equal(a.status, "provisioning");
    assert.equal(b.status, "failed");
    assert.equal(b.error, "container exited with code 1");
    assert.ok((a.seq as number) > (snap.seq as number) && (b.seq as number) > (a.seq as number));
    const again = await subscribe();
    assert.equal((await again.frame(1)).status, "failed", "the snapshot is the latest status");
    c.close();
    again.close();
  });

  it("since: a reconnecting client gets exactly what it missed; a lost cursor gets reset + snapshot", async () => {
    const first = await subscribe();
    const seen = (await first.frame(1)).seq as number;
    first.close();
    await h.api.events.publish(LEASE, "provisioning");
    await h.api.events.publish(LEASE, "ready");
    const resumed = await subscribe(`?since=${seen}`);
    assert.deepEqual(
      [(await resumed.frame(1)).status, (await resumed.frame(2)).status],
      ["provisioning", "ready"],
    );
    assert.equal(resumed.frames[0]!.type, undefined, "no snapshot on a resume that misses nothing");
    for (let i = 0; i < 5; i++) await h.api.events.publish(LEASE, `s${i}`);
    const stale = await subscribe(`?since=${seen}`);
    assert.deepEqual(await stale.frame(1), { type: "reset" });
    const snap = await stale.frame(2);
    assert.equal(snap.type, "snapshot");
    assert.equal(snap.status, "s4");
    const future = await subscribe(`?since=${Number.MAX_SAFE_INTEGER}`);
    assert.equal((await future.frame(1)).type, "reset");
    resumed.close();
    stale.close();
    future.close();
  });

  it("a provision outcome nobody watches is buffered without a chain read; a watched one reads the chain", async () => {
    const cb = {
      backend: "one",
      leaseUuid: LEASE,
      capability: { kind: "operation" as const, id: "0190f3a2-7c1e-4000-8000-0000000000aa" },
      status: "success" as const,
      error: "",
    };
    const before = h.chainReads;
    const since = h.api.hub.currentSeq;
    h.api.events.callbackApplied(cb, "acknowledging");
    await until(() => h.api.hub.lastStatus(LEASE) === "ready", "unwatched frame published");
    assert.equal(h.chainReads, before, "no chain read for a frame nobody watches");
    const replay = await subscribe(`?since=${since}`);
    const buffered = await replay.frame(1);
    assert.equal(buffered.status, "ready");
    assert.equal(
      buffered.state,
      "LEASE_STATE_PENDING",
      "a provision outcome happens while the lease is PENDING",
    );
    const reads = h.chainReads;
    h.api.events.callbackApplied({ ...cb, status: "failed", error: "boom" }, "rejecting");
    const watched = await replay.frame(2);
    assert.equal(watched.status, "failed");
    assert.ok(h.chainReads > reads, "a watched lease's frame reads the chain");
    assert.equal(watched.state, "LEASE_STATE_ACTIVE", "the state the chain reports");
    replay.close();
  });

  it("notices reach only clients that opted in", async () => {
    const plain = await subscribe();
    const opted = await subscribe("?notices=1");
    await plain.frame(1);
    await opted.frame(1);
    h.api.hub.notify(LEASE, { type: "maintenance", note: "x" });
    await h.api.events.publish(LEASE, "ready");
    assert.equal((await opted.frame(2)).type, "maintenance");
    assert.equal((await opted.frame(3)).status, "ready");
    assert.equal((await plain.frame(2)).status, "ready");
    assert.equal(plain.frames.length, 2);
    plain.close();
    opted.close();
  });

  it("client data closes with 1008, more than 512 bytes with 1009", async () => {
    const a = await subscribe();
    a.ws.send("hello");
    assert.equal((await a.closed).code, 1008);
    const b = await subscribe();
    b.ws.send(Buffer.alloc(513, 1));
    assert.equal((await b.closed).code, 1009);
    await until(() => h.api.hub.subscribers === 0, "subscriptions released");
  });

  it("caps: the 11th subscription of a lease and the 13th in total are accepted, then closed 1013", async () => {
    const clients: WsClient[] = [];
    for (let i = 0; i < 10; i++) clients.push(await subscribe());
    const extra = await subscribe();
    assert.deepEqual(await extra.closed, { code: 1013, reason: "too many connections" });
    h.lease(OTHER);
    clients.push(await subscribe("", h.token(OTHER), OTHER), await subscribe("", h.token(OTHER), OTHER));
    const over = await subscribe("", h.token(OTHER), OTHER);
    assert.equal((await over.closed).code, 1013);
    assert.equal(h.api.hub.subscribers, 12);
    for (const c of clients) c.close();
  });

  it("pings every 30 s; no pong within 40 s ends the connection; one hour ends it with 1013", async () => {
    const quiet = await subscribe("", h.token(LEASE), LEASE, { autoPong: false });
    await quiet.frame(1);
    const pinged = quiet.pinged();
    h.clock.advance(30_000);
    await pinged;
    h.clock.advance(10_001);
    assert.equal((await quiet.closed).code, 1006, "terminated without a close frame");

    const polite = await subscribe();
    await polite.frame(1);
    // Answering every ping keeps it open until the lifetime ends it.
    for (let t = 30_000; t < 60 * 60_000; t += 30_000) {
      const p = polite.pinged();
      h.clock.advance(30_000);
      await p;
      await polite.roundTrip();
      assert.equal(polite.ws.readyState, polite.ws.OPEN, `still open at ${t / 1000} s`);
    }
    h.clock.advance(30_000);
    assert.deepEqual(await polite.closed, { code: 1013, reason: "max connection lifetime reached" });
  });

  it("a client that stops reading is cut off instead of growing memory", async () => {
    const slow = await stalledSubscriber(h.url, `${path(LEASE)}?token=${encodeURIComponent(h.token(LEASE))}`);
    const closed = once(slow, "close");
    await until(() => h.api.hub.subscribers === 1, "stalled client subscribed");
    const filler = "x".repeat(400);
    for (let i = 0; i < 200_000 && h.api.hub.subscribers > 0; i++) {
      await h.api.events.publish(LEASE, "ready", filler);
    }
    assert.equal(h.api.hub.subscribers, 0, "the stalled client was dropped");
    assert.equal(sample(await h.registry.metrics(), "fred_events_dropped_total"), 1);
    slow.resume();
    await closed;
  });

  it("shutdown closes every stream with 1001", async () => {
    const c = await subscribe();
    await c.frame(1);
    await h.app.close();
    assert.equal((await c.closed).code, 1001);
  });
});

describe("event hub", () => {
  it("defaults: 10 per lease, 1,000 in total", () => {
    const hub = new EventHub({ clock: new ManualClock() });
    const sink = (leaseUuid: string) => ({ leaseUuid, optedIn: false, send: () => {}, close: () => {} });
    let ok = 0;
    for (let l = 0; l < 101; l++) {
      for (let i = 0; i < 11; i++) if (hub.subscribe(sink(`lease-${l}`)) === "ok") ok++;
    }
    assert.equal(ok, 1_000);
  });
});
