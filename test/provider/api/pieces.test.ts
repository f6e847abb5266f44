import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { describe, it } from "node:test";
import Fastify from "fastify";
import type { ChainLease, ChainPort } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/log.ts";
import { connectionDetails } from "../../../src/provider/api/connection-shape.ts";
import { ApiError } from "../../../src/provider/api/errors.ts";
import { LogAdmission } from "../../../src/provider/api/log-admission.ts";
import { tenantRelease } from "../../../src/provider/api/routes/releases.ts";
import { TenantLeaseReads } from "../../../src/provider/api/tenant-lease-reads.ts";
import { ClientIp, installEdge } from "../../../src/provider/http/edge.ts";
import { chainLease } from "./harness.ts";

/**
 * The tenant API's pure pieces, each against its contract: the connection shape, the
 * release relay, log admission, and the lease read path (coalescing, bounded, never
 * caching a failure). The chain is faked only at its port (the process boundary).
 */
const logger = createLogger("test", "error");
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";

const lease = (): ChainLease => chainLease(LEASE, "manifest1abc");

/** A chain port whose getLease is answered by the test, one deferred promise per call. */
function deferredChain() {
  const calls: { resolve: (l: ChainLease | undefined) => void; reject: (e: unknown) => void }[] = [];
  const chain = {
    getLease: () =>
      new Promise<ChainLease | undefined>((resolve, reject) => {
        calls.push({ resolve, reject });
      }),
  } as unknown as ChainPort;
  return { chain, calls };
}

const settle = () => new Promise((r) => setImmediate(r));

describe("connection shape", () => {
  it("stack leases: per-service instances, fqdn propagated from the first instance, ports as integers", () => {
    const out = connectionDetails({
      host: "h.example.com",
      services: {
        web: {
          instances: [
            {
              instance_index: 0,
              container_id: "c0",
              image: "nginx",
              status: "running",
              fqdn: "0-web.example.com",
            },
            { instance_index: 1, ports: { "80/tcp": { host_ip: "0.0.0.0", host_port: "32768" } } },
          ],
        },
        db: { fqdn: "db.example.com", instances: [{ instance_index: 0, fqdn: "0-db.example.com" }] },
        idle: {},
      },
      metadata: {},
    });
    assert.deepEqual(out, {
      host: "h.example.com",
      services: {
        web: {
          fqdn: "0-web.example.com",
          instances: [
            {
              instance_index: 0,
              container_id: "c0",
              image: "nginx",
              status: "running",
              fqdn: "0-web.example.com",
            },
            { instance_index: 1, ports: { "80/tcp": { host_ip: "0.0.0.0", host_port: 32768 } } },
          ],
        },
        db: { fqdn: "db.example.com", instances: [{ instance_index: 0, fqdn: "0-db.example.com" }] },
        idle: { instances: [] },
      },
    });
  });

  it("multi-instance leases: the top-level fqdn comes from the first instance unless set", () => {
    const instances = [
      { instance_index: 0, fqdn: "0-a.example.com" },
      { instance_index: 1, fqdn: "1-b.example.com" },
    ];
    assert.equal(connectionDetails({ host: "h", instances }).fqdn, "0-a.example.com");
    assert.equal(
      connectionDetails({ host: "h", fqdn: "top.example.com", instances }).fqdn,
      "top.example.com",
    );
    assert.equal(connectionDetails({ host: "h", instances: [{ instance_index: 0 }] }).fqdn, undefined);
  });

  it("an unreadable shape is refused, not guessed", () => {
    for (const bad of [
      { instances: ["x"] },
      { ports: { "80/tcp": { host_port: "eighty" } } },
      { ports: { "80/tcp": { host_port: 70_000 } } },
      { services: { web: "x" } },
      { instances: [{ instance_index: "0" }] },
    ]) {
      assert.throws(() => connectionDetails(bad as never), /unreadable/);
    }
  });
});

describe("release relay", () => {
  it("keeps the documented fields, defaults a failed release's reason to Unknown", () => {
    assert.deepEqual(
      tenantRelease({
        version: 2,
        image: "nginx",
        status: "failed",
        created_at: "t",
        extra: "dropped",
        message: "",
      }),
      { version: 2, image: "nginx", status: "failed", created_at: "t", reason: "Unknown" },
    );
    assert.throws(() => tenantRelease({ version: "2" }));
    assert.throws(() => tenantRelease({ version: 1, image: 5 }));
  });
});

describe("log admission", () => {
  it("admits nine, refuses the tenth with Retry-After: 1, and frees a place on release", () => {
    const admission = new LogAdmission();
    const signal = new AbortController().signal;
    const tickets = Array.from({ length: 9 }, () => admission.admit(signal));
    assert.throws(
      () => admission.admit(signal),
      (err: unknown) => err instanceof ApiError && err.status === 503 && err.retryAfterSeconds === 1,
    );
    tickets[0]!.release();
    tickets[0]!.release();
    assert.equal(admission.admitted, 8);
    admission.admit(signal);
    assert.equal(admission.admitted, 9);
  });

  it("grants the one response slot in arrival order", async () => {
    const admission = new LogAdmission();
    const signal = new AbortController().signal;
    const [a, b, c] = [admission.admit(signal), admission.admit(signal), admission.admit(signal)];
    const order: string[] = [];
    const pa = a.responseSlot(signal).then(() => order.push("a"));
    const pc = c.responseSlot(signal).then(() => order.push("c"));
    const pb = b.responseSlot(signal).then(() => order.push("b"));
    await pa;
    await settle();
    assert.deepEqual(order, ["a"], "one holder at a time");
    a.release();
    await pc;
    await settle();
    assert.deepEqual(order, ["a", "c"]);
    c.release();
    await pb;
    assert.deepEqual(order, ["a", "c", "b"]);
  });

  it("a request whose wait is cut short gets the timeout envelope (no Retry-After) and leaves the queue", async () => {
    const admission = new LogAdmission();
    const live = new AbortController();
    const holder = admission.admit(live.signal);
    await holder.responseSlot(live.signal);
    const cut = new AbortController();
    const waiter = admission.admit(cut.signal);
    const waiting = waiter.responseSlot(cut.signal);
    cut.abort();
    await assert.rejects(
      waiting,
      (err: unknown) => err instanceof ApiError && err.status === 503 && err.retryAfterSeconds === undefined,
    );
    waiter.release();
    const next = admission.admit(live.signal);
    const granted = next.responseSlot(live.signal);
    holder.release();
    await granted;
    assert.ok(next.holding);
    const aborted = new AbortController();
    aborted.abort();
    assert.throws(
      () => admission.admit(aborted.signal),
      (err: unknown) => err instanceof ApiError,
    );
  });
});

describe("lease reads", () => {
  it("concurrent requests for one lease share one chain read, reused for under a block", async () => {
    const clock = new ManualClock();
    const { chain, calls } = deferredChain();
    const reads = new TenantLeaseReads({ chain, clock, providerUuid: "p", logger, ttlMs: 1_000 });
    const all = Promise.all(Array.from({ length: 50 }, () => reads.read(LEASE)));
    await settle();
    assert.equal(calls.length, 1);
    calls[0]!.resolve(lease());
    assert.ok((await all).every((l) => l?.uuid === LEASE));
    await reads.read(LEASE);
    assert.equal(calls.length, 1, "served from the one-block cache");
    clock.advance(1_001);
    const again = reads.read(LEASE);
    await settle();
    assert.equal(calls.length, 2, "read again once the cache expired");
    calls[1]!.resolve(lease());
    await again;
  });

  /** A BlockSignal driven by the test. */
  function fakeFeed() {
    const blockListeners = new Set<() => void>();
    const leaseListeners = new Set<(uuid: string) => void>();
    const stateListeners = new Set<() => void>();
    const listen = <L>(set: Set<L>, l: L) => {
      set.add(l);
      return () => void set.delete(l);
    };
    const feed = {
      isLive: true,
      live: () => feed.isLive,
      onBlock: (l: () => void) => listen(blockListeners, l),
      onLeaseEvent: (l: (uuid: string) => void) => listen(leaseListeners, l),
      onStateChange: (l: () => void) => listen(stateListeners, l),
      newBlock: () => {
        for (const l of blockListeners) l();
      },
      leaseEvent: (uuid: string) => {
        for (const l of leaseListeners) l(uuid);
      },
      setLive: (live: boolean) => {
        feed.isLive = live;
        for (const l of stateListeners) l();
      },
      listeners: () => blockListeners.size + leaseListeners.size + stateListeners.size,
    };
    return feed;
  }

  /** Lease reads with a live fake feed, the test answering each chain read. */
  function liveReads() {
    const clock = new ManualClock();
    const { chain, calls } = deferredChain();
    const feed = fakeFeed();
    const reads = new TenantLeaseReads({
      chain,
      clock,
      providerUuid: "p",
      logger,
      ttlMs: 1_000,
      blocks: feed,
    });
    return { clock, calls, feed, reads };
  }

  it("with a live feed an ACTIVE lease's answer is kept across blocks until an event for it (at most watchedTtlMs)", async () => {
    const { clock, calls, feed, reads } = liveReads();
    const readNow = async (answer: ChainLease | undefined = lease()) => {
      const p = reads.read(LEASE);
      await settle();
      calls.at(-1)?.resolve(answer);
      return p;
    };
    await readNow();
    feed.newBlock();
    feed.newBlock();
    clock.advance(20_000);
    assert.equal((await reads.read(LEASE))?.state, "LEASE_STATE_ACTIVE");
    assert.equal(calls.length, 1, "blocks do not drop an ACTIVE answer");
    feed.leaseEvent("0190f3a2-7c1e-7000-8000-0000000000ff");
    await reads.read(LEASE);
    assert.equal(calls.length, 1, "another lease's event does not drop it");
    feed.leaseEvent(LEASE);
    const closed = await readNow(chainLease(LEASE, "manifest1abc", "LEASE_STATE_CLOSED"));
    assert.equal(calls.length, 2, "an event for the lease drops it");
    assert.equal(closed?.state, "LEASE_STATE_CLOSED");
    clock.advance(29_999);
    await reads.read(LEASE);
    assert.equal(calls.length, 2, "kept within watchedTtlMs");
    clock.advance(2);
    await readNow();
    assert.equal(calls.length, 3, "past watchedTtlMs the chain is read again");
    // A read that began before an event for its lease answers its callers but is not kept.
    feed.leaseEvent(LEASE);
    const early = reads.read(LEASE);
    await settle();
    feed.leaseEvent(LEASE);
    calls[3]!.resolve(lease());
    await early;
    await readNow();
    assert.equal(calls.length, 5, "the read that straddled the event was not kept");
    // The feed going down or coming back drops everything: events may have been missed.
    feed.setLive(false);
    await readNow();
    assert.equal(calls.length, 6, "leaving live dropped the answer");
    clock.advance(1_001);
    await readNow();
    assert.equal(calls.length, 7, "without a live feed the answer lasts ttlMs");
    feed.setLive(true);
    await readNow();
    assert.equal(calls.length, 8, "going live dropped it again");
    reads.close();
    assert.equal(feed.listeners(), 0, "close unsubscribes from blocks, events and state");
  });

  it("with a live feed a PENDING or unknown lease is read again at each block (at most blockTtlMs); a read straddling a block is not kept", async () => {
    const { clock, calls, feed, reads } = liveReads();
    const readNow = async (answer: ChainLease | undefined) => {
      const p = reads.read(LEASE);
      await settle();
      calls.at(-1)?.resolve(answer);
      return p;
    };
    const pending = chainLease(LEASE, "manifest1abc", "LEASE_STATE_PENDING");
    await readNow(pending);
    clock.advance(5_000);
    assert.equal((await reads.read(LEASE))?.state, "LEASE_STATE_PENDING");
    assert.equal(calls.length, 1, "no block yet: the PENDING answer still holds after 5 s");
    feed.newBlock();
    assert.equal(await readNow(undefined), undefined);
    assert.equal(calls.length, 2, "a block drops a PENDING answer");
    await reads.read(LEASE);
    assert.equal(calls.length, 2, "an unknown lease's answer holds until the next block");
    feed.newBlock();
    await readNow(pending);
    assert.equal(calls.length, 3, "a block drops an unknown lease's answer");
    clock.advance(10_001);
    // Begun before a block, answered after it: ACTIVE by then, but not kept.
    const early = reads.read(LEASE);
    await settle();
    assert.equal(calls.length, 4, "past blockTtlMs the chain is read again");
    feed.newBlock();
    calls[3]!.resolve(lease());
    assert.equal((await early)?.state, "LEASE_STATE_ACTIVE");
    await readNow(lease());
    assert.equal(calls.length, 5, "the read that straddled the block was not kept");
    feed.newBlock();
    await reads.read(LEASE);
    assert.equal(calls.length, 5, "the ACTIVE answer read after the block is kept across the next");
    reads.close();
  });

  it("a failed read is 500 and never cached; a full bulkhead is 503", async () => {
    const clock = new ManualClock();
    const { chain, calls } = deferredChain();
    const reads = new TenantLeaseReads({ chain, clock, providerUuid: "p", logger, concurrency: 1, queue: 1 });
    const failing = reads.read(LEASE);
    await settle();
    calls[0]!.reject(new Error("rpc down"));
    await assert.rejects(failing, (err: unknown) => err instanceof ApiError && err.status === 500);
    const retried = reads.read(LEASE);
    await settle();
    assert.equal(calls.length, 2, "the failure was not cached");
    const queued = reads.read("0190f3a2-7c1e-7000-8000-000000000002");
    await assert.rejects(
      reads.read("0190f3a2-7c1e-7000-8000-000000000003"),
      (err: unknown) => err instanceof ApiError && err.status === 503,
    );
    calls[1]!.resolve(lease());
    await retried;
    await settle();
    calls[2]!.resolve(undefined);
    assert.equal(await queued, undefined);
  });

  it("a chain read past its deadline is the same 500, caused by ERR_CHAIN_READ_TIMEOUT on the injected clock", async () => {
    const clock = new ManualClock();
    const { chain, calls } = deferredChain();
    const reads = new TenantLeaseReads({ chain, clock, providerUuid: "p", logger, timeoutMs: 2_000 });
    const hanging = reads.read(LEASE);
    await settle();
    assert.equal(calls.length, 1);
    clock.advance(2_000);
    await assert.rejects(hanging, (err: unknown) => {
      assert.ok(err instanceof ApiError && err.status === 500 && err.code === "ERR_API_CHAIN_READ");
      assert.ok(isFredError(err.cause, "ERR_CHAIN_READ_TIMEOUT"), String(err.cause));
      return true;
    });
  });
});

describe("client address behind trusted proxies", () => {
  const req = (remoteAddress: string, xff?: string) =>
    ({ socket: { remoteAddress }, headers: xff === undefined ? {} : { "x-forwarded-for": xff } }) as never;

  it("ignores X-Forwarded-For from untrusted peers and uses the rightmost untrusted hop otherwise", () => {
    const ip = new ClientIp(["10.0.0.0/8", "fd00::/8"]);
    assert.equal(ip.of(req("203.0.113.9", "1.1.1.1")), "203.0.113.9");
    assert.equal(ip.of(req("10.1.1.1", "1.1.1.1, 2.2.2.2")), "2.2.2.2");
    assert.equal(ip.of(req("::ffff:10.1.1.1", "1.1.1.1, 10.2.2.2")), "1.1.1.1");
    assert.equal(ip.of(req("fd00::1", "2001:db8::7")), "2001:db8::7");
    assert.equal(ip.of(req("10.1.1.1", "10.2.2.2, 10.3.3.3")), "10.2.2.2", "all trusted: the leftmost");
    assert.equal(ip.of(req("10.1.1.1", "garbage")), "10.1.1.1", "an unreadable hop: the proxy itself");
    assert.equal(ip.of(req("10.1.1.1")), "10.1.1.1");
    assert.equal(new ClientIp([]).of(req("::ffff:127.0.0.1", "9.9.9.9")), "127.0.0.1");
  });
});

describe("write deadline", () => {
  it("a client that does not read the answer loses its connection at http_write_timeout", async () => {
    const clock = new ManualClock();
    const app = Fastify();
    installEdge(app, {
      clock,
      clientIp: new ClientIp([]),
      rateLimit: { rps: 100, burst: 100 },
      corsOrigins: [],
      writeTimeoutMs: 15_000,
      exemptPaths: new Set(),
    });
    app.get("/big", async () => "x".repeat(64 * 1024 * 1024));
    await app.listen({ host: "127.0.0.1", port: 0 });
    try {
      const socket = connect((app.server.address() as { port: number }).port, "127.0.0.1");
      await once(socket, "connect");
      socket.write("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
      let received = (await once(socket, "data"))[0].length as number;
      socket.pause();
      socket.on("data", (d: Buffer) => {
        received += d.length;
      });
      const closed = once(socket, "close");
      clock.advance(15_000);
      socket.resume();
      await closed;
      assert.ok(received < 64 * 1024 * 1024, `cut off after ${received} bytes`);
    } finally {
      await app.close();
    }
  });
});
