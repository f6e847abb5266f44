import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { websocketUrlFor } from "../../../src/chain/cosmos/rpc.ts";
import type { FeedConsumer } from "../../../src/chain/events/fanout.ts";
import { EventFeed } from "../../../src/chain/events/feed.ts";
import type { FeedItem } from "../../../src/chain/events/types.ts";
import { registerChainMetrics } from "../../../src/chain/metrics.ts";
import { MsgCancelLease } from "../../../src/chain/proto/index.ts";
import { type Devnet, devnet, until } from "../../support/index.ts";
import { advanceTime, clientFor, createLeases } from "./helpers.ts";

/** Collects everything a consumer receives, in order. */
function collector(consumer: FeedConsumer): FeedItem[] {
  const seen: FeedItem[] = [];
  void (async () => {
    for await (const item of consumer) seen.push(item);
  })();
  return seen;
}

function has(seen: FeedItem[], kind: string, lease?: string): boolean {
  return seen.some(
    (i) =>
      i.type === "event" && i.event.kind === kind && (lease === undefined || i.event.leaseUuid === lease),
  );
}

describe("event feed against a real devnet", () => {
  let dn: Devnet;
  let provider: CosmosChain;
  let tenant: CosmosChain;
  let feed: EventFeed;
  let seen: FeedItem[];
  before(async () => {
    dn = await devnet({ blockTime: "200ms", tenants: 2 });
    provider = await clientFor(dn, "provider");
    tenant = await clientFor(dn, "tenant1");
    feed = new EventFeed({
      url: websocketUrlFor(dn.rpc),
      providerUuid: dn.keys.provider_uuid,
      pingIntervalMs: 1000,
      reconnectInitialMs: 100,
      reconnectMaxMs: 400,
      stallTimeoutMs: 2_000,
      fetchBlockEvents: (height, signal) => provider.blockEvents(height, signal),
    });
    seen = collector(feed.subscribe("lifecycle"));
    feed.start();
    await feed.whenState("live", AbortSignal.timeout(15_000));
    if (feed.metrics().lastHeight === 0) await once(feed, "block", { signal: AbortSignal.timeout(15_000) });
  });
  after(async () => {
    await feed?.stop();
    provider?.disconnect();
    tenant?.disconnect();
    await dn?.stop();
  });

  it("delivers lease_created and lease_closed for our provider", async () => {
    const [a, b] = await createLeases(tenant, dn, 2);
    await until(() => has(seen, "lease_created", a) && has(seen, "lease_created", b), "lease_created ×2");
    const created = seen.find((i) => i.type === "event" && i.event.leaseUuid === a);
    assert.ok(
      created?.type === "event" && created.event.tenant === tenant.address && created.event.height > 0,
    );
    assert.match(created?.type === "event" ? (created.event.txHash ?? "") : "", /^[0-9A-F]{64}$/);
    await provider.acknowledge([a as string]);
    await tenant.closeLeases([a as string], "done");
    await until(() => has(seen, "lease_closed", a), "lease_closed");
    const closed = seen.find((i) => i.type === "event" && i.event.kind === "lease_closed");
    assert.equal(closed?.type === "event" ? closed.event.reason : "", "tenant");
    // A tenant withdrawing a PENDING lease: lease_cancelled.
    await tenant.send([
      {
        typeUrl: MsgCancelLease.typeUrl,
        value: MsgCancelLease.fromPartial({ tenant: tenant.address, leaseUuids: [b as string] }),
      },
    ]);
    await until(() => has(seen, "lease_cancelled", b), "lease_cancelled");
  });

  it("block production paused → heartbeat reconnect and resync; events flow after resume", async () => {
    const before = feed.metrics();
    await dn.call("devnet_pause");
    try {
      await until(
        () => feed.metrics().heartbeatTimeouts > before.heartbeatTimeouts,
        "heartbeat timeout",
        10_000,
      );
      await until(() => feed.metrics().reconnects > before.reconnects, "reconnect", 10_000);
      assert.ok(seen.some((i) => i.type === "resync" && i.reason === "reconnect"));
    } finally {
      await dn.call("devnet_resume");
    }
    const [c] = await createLeases(tenant, dn, 1);
    await until(() => has(seen, "lease_created", c), "event after resume");
  });

  it("devnet killed and restarted mid-subscription: the feed comes back, resyncs, and delivers", async () => {
    const before = feed.metrics().reconnects;
    const resyncs = seen.filter((i) => i.type === "resync").length;
    await dn.kill();
    await feed.whenState("backoff", AbortSignal.timeout(10_000));
    await dn.restart();
    await feed.whenState("live", AbortSignal.timeout(20_000));
    assert.ok(feed.metrics().reconnects > before, "reconnected");
    // The resync is queued for the consumer as the feed goes live; the collector reads it next.
    await until(() => seen.filter((i) => i.type === "resync").length > resyncs, "resync delivered");
    const [d] = await createLeases(tenant, dn, 1);
    await until(() => has(seen, "lease_created", d), "event after restart");
  });

  it("EndBlock expiry arrives from block events; provider-wide withdraw reports lease_auto_closed", async () => {
    const pending = await createLeases(tenant, dn, 1);
    // Pending timeout is 1800 s: jump past it; the expiry happens in EndBlock.
    await advanceTime(dn, provider, 1801);
    await until(() => has(seen, "lease_expired", pending[0]), "lease_expired", 10_000);
    const expired = seen.find((i) => i.type === "event" && i.event.kind === "lease_expired");
    assert.equal(expired?.type === "event" ? expired.event.reason : "", "pending_timeout");
    assert.equal(expired?.type === "event" ? expired.event.txHash : "x", undefined);
    // A docker-large lease (400 upwr/s) exhausts the tenant's 1e9 upwr within 30 days.
    const [big] = await createLeases(tenant, dn, 1, "docker-large");
    await provider.acknowledge([big as string]);
    await advanceTime(dn, provider, 30 * 86400);
    await provider.withdrawAll(dn.keys.provider_uuid);
    await until(() => has(seen, "lease_auto_closed", big), "lease_auto_closed", 10_000);
    const registry = new Registry();
    registerChainMetrics(registry, { feed: () => feed.metrics(), tx: provider.pipeline?.metrics });
    const text = await registry.metrics();
    assert.match(text, /fred_chain_last_block_height \d+/);
    assert.match(text, /fred_chain_feed_reconnects_total [1-9]/);
    assert.match(text, /fred_chain_tx_outcomes_total\{outcome="success"\} [1-9]/);
    assert.equal(feed.metrics().malformed, 0);
  });
});
