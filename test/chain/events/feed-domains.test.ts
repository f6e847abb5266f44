import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { EventFeed } from "../../../src/chain/events/feed.ts";
import type { FeedItem } from "../../../src/chain/events/types.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { until } from "../../support/index.ts";
import { startFakeComet } from "./fake-comet.ts";
import {
  blockEventsFrame,
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

function drain(poll: () => FeedItem | undefined): string[] {
  const out: string[] = [];
  for (let i = poll(); i !== undefined; i = poll())
    out.push(i.type === "event" ? `${i.event.kind}:${i.event.leaseUuid}` : `resync:${i.reason}`);
  return out;
}

function domainEvent(type: string, lease: number, provider = PROVIDER) {
  return ev(type, {
    lease_uuid: leaseUuid(lease),
    tenant: TENANT,
    service_name: "web",
    custom_domain: "shop.example.org",
    set_by: "tenant",
    provider_uuid: provider,
  });
}

describe("event feed: the custom-domain channel (second socket)", () => {
  it("subscribes on its own socket, delivers set/clear for our provider, keeps its own heartbeat", async () => {
    const fake = await startFakeComet();
    cleanups.push(() => fake.close());
    const clock = new ManualClock();
    const feed = new EventFeed({
      url: fake.url,
      providerUuid: PROVIDER,
      clock,
      random: () => 0.5,
      stallTimeoutMs: 10_000,
      customDomains: true,
    });
    cleanups.push(() => feed.stop());
    const c = feed.subscribe("lifecycle");
    feed.start();
    await until(() => fake.subscriptions.length === 8, "5 + 3 subscriptions");
    await feed.whenState("live");
    assert.equal(fake.connections, 2, "one socket per channel (5 subscriptions per client at most)");
    const domainQueries = fake.subscriptions.filter((s) => Number(s.id) >= 7).map((s) => s.query);
    assert.deepEqual(domainQueries, [
      `tm.event='Tx' AND lease_custom_domain_set.provider_uuid='${PROVIDER}'`,
      `tm.event='Tx' AND lease_custom_domain_cleared.provider_uuid='${PROVIDER}'`,
      "tm.event='NewBlockHeader'",
    ]);

    // The fake pushes every frame to both sockets: each channel takes only its own ids.
    fake.push(txFrame(7, "q", 5, [domainEvent("lease_custom_domain_set", 1)]));
    fake.push(txFrame(7, "q", 5, [domainEvent("lease_custom_domain_set", 2, OTHER_PROVIDER)], "other"));
    fake.push(txFrame(8, "q", 6, [domainEvent("lease_custom_domain_cleared", 1)]));
    await until(() => feed.metrics().eventsPublished === 2, "two events");
    assert.deepEqual(
      drain(() => c.poll()),
      [`lease_custom_domain_set:${leaseUuid(1)}`, `lease_custom_domain_cleared:${leaseUuid(1)}`],
    );

    // Blocks on the leases socket do not keep the domains socket alive: it has its own heartbeat.
    fake.push(blockEventsFrame(4, 7, []));
    fake.push(headerFrame(9, 7));
    await until(() => feed.metrics().lastHeight === 7, "height 7");
    clock.advance(9_999);
    fake.push(blockEventsFrame(4, 8, []));
    await until(() => feed.metrics().lastHeight === 8, "height 8");
    assert.equal(feed.state, "live");
    clock.advance(2);
    await feed.whenState("backoff");
    assert.equal(feed.metrics().heartbeatTimeouts, 1);
    assert.equal(fake.connections, 2, "the leases socket stayed up");
    clock.advance(1_000);
    await feed.whenState("live");
    assert.equal(fake.connections, 3);
    assert.deepEqual(
      drain(() => c.poll()),
      ["resync:reconnect"],
      "a missed domain event is covered by a resync",
    );
  });
});
