import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { Agent, type Dispatcher } from "undici";
import { hmacSecret } from "../../../src/auth/hmac.ts";
import { Journal } from "../../../src/backend/kit/journal/journal.ts";
import {
  CALLBACK_CONCURRENCY,
  OutboxSender,
  type OutboxSenderOptions,
} from "../../../src/backend/kit/outbox-sender.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { until as poll } from "../../support/index.ts";
import { type Receiver, startReceiver } from "./receiver.ts";

/**
 * The callback sender against a real HTTP receiver, with time on a ManualClock: three
 * attempts at 0/1/5 s, then nothing until the 30 s replay; per-lease FIFO with head-of-line
 * blocking; any 2xx delivers; a redirect is not followed and is not delivery; a receiver
 * that never answers costs each try its timeout and the chain its deadline, both on the clock.
 */
const SECRET = "outbox-test-secret-0123456789abcdef012345";

describe("outbox sender", () => {
  let rx: Receiver;
  let clock: ManualClock;
  let journal: Journal;
  let sender: OutboxSender;
  /** Tries that failed so far (counted as the sender reports them, before its backoff sleep). */
  let failed = 0;
  before(async () => {
    rx = await startReceiver(SECRET);
  });
  after(async () => {
    await rx.close();
  });
  const fresh = (extra: Partial<OutboxSenderOptions> = {}, path = ":memory:") => {
    clock = new ManualClock(Date.now());
    failed = 0;
    journal = new Journal({
      path,
      mode: "bind-or-verify",
      storageId: randomUUID(),
      backendName: "b",
    });
    sender = new OutboxSender({
      journal,
      secret: hmacSecret(SECRET),
      clock,
      logger: createLogger("outbox-test", "silent"),
      onAttemptFailed: () => failed++,
      ...extra,
    });
  };
  const stop = async () => {
    await sender.stop();
    journal.close();
  };
  /** Commits a settled provision (operation row) and, optionally, its close (lifecycle row). */
  const settle = (close = false) => {
    const lease = randomUUID();
    const op = randomUUID();
    const a = journal.admitOperation({
      leaseUuid: lease,
      tenant: "t",
      providerUuid: randomUUID(),
      operationId: op,
      callbackUrl: `${rx.url}/callbacks/provision?operation_id=${op}`,
      lifecycleUrl: `${rx.url}/callbacks/provision?lifecycle_id=${op}`,
      items: [],
      instances: [],
      payload: undefined,
      payloadHash: undefined,
      image: "",
      requestDigest: "digest",
      nowMs: clock.now(),
    });
    const s = journal.markStarted(lease, a.generation);
    assert.ok(s && journal.settleSuccess(lease, s.generation, clock.now()));
    if (close) {
      const c = journal.beginClose(lease, clock.now());
      assert.ok(c.kind === "closing" && journal.completeClose(lease, c.lease.generation, clock.now()));
    }
    return lease;
  };
  const of = (lease: string) => rx.deliveries.filter((d) => d.body.lease_uuid === lease);
  const until = (check: () => boolean, what: string) =>
    poll(check, what, { timeoutMs: 10_000, intervalMs: 5 });
  /**
   * The `tries`th try failed and its backoff sleep is armed: then the clock holds the chain
   * deadline, the replay timer and the sleep (the try's own timeout went with its answer).
   */
  const backoffArmed = (tries: number) =>
    until(() => failed === tries && clock.pendingTimers === 3, `backoff after try ${tries} armed`);

  it("tries three times at 0 s, 1 s and 5 s, then waits for the 30 s replay", async () => {
    fresh();
    rx.setMode(503);
    const lease = settle();
    sender.start();
    try {
      await until(() => of(lease).length === 1, "first attempt");
      await backoffArmed(1);
      assert.equal(of(lease).length, 1);
      clock.advance(999);
      assert.equal(of(lease).length, 1);
      clock.advance(1);
      await until(() => of(lease).length === 2, "second attempt");
      await backoffArmed(2);
      clock.advance(4_999);
      assert.equal(of(lease).length, 2);
      clock.advance(1);
      await until(() => of(lease).length === 3, "third attempt");
      await until(() => clock.pendingTimers === 1, "chain over: only the replay timer left");
      assert.equal(journal.outboxSize(), 1, "the row stays until a 2xx");
      rx.setMode(204);
      sender.wake(lease); // an ordinary wake does not retry a head that just failed
      await sender.whenIdle(); // the wake's pass is over and left the lease alone
      assert.equal(of(lease).length, 3);
      clock.advance(30_000 - 6_000);
      await until(() => journal.outboxSize() === 0, "delivered on replay");
      assert.equal(of(lease).length, 4);
      assert.ok(of(lease).every((d) => d.signatureValid));
    } finally {
      rx.setMode(200);
      await stop();
    }
  });

  it("keeps a lease's rows in order and blocks only that lease behind a failing head", async () => {
    fresh();
    rx.setMode(500);
    const blocked = settle(true); // success row, then deprovisioned row
    sender.start();
    try {
      await until(() => of(blocked).length === 1, "first attempt on the head");
      rx.setMode(200);
      const other = settle();
      sender.wake(other);
      await until(() => of(other).length === 1, "another lease is not blocked");
      assert.deepEqual(
        of(blocked).map((d) => d.body.status),
        ["success"],
        "the deprovisioned row waits behind its head",
      );
      clock.advance(1_000);
      await until(() => journal.outboxSize() === 0, "head then tail delivered");
      assert.deepEqual(
        of(blocked).map((d) => `${d.route}:${d.body.status}`),
        ["operation:success", "operation:success", "lifecycle:deprovisioned"],
      );
    } finally {
      await stop();
    }
  });

  it("does not follow a redirect and does not count it as delivery", async () => {
    fresh();
    rx.setMode(302);
    const lease = settle();
    sender.start();
    try {
      await until(() => of(lease).length === 1, "first attempt");
      await backoffArmed(1);
      assert.equal(journal.outboxSize(), 1);
      assert.equal(rx.deliveries.filter((d) => d.body.lease_uuid === lease).length, 1);
    } finally {
      rx.setMode(200);
      await stop();
    }
  });

  it("a receiver that never answers: each try ends at its timeout, the chain at its deadline, each logged with its code", async () => {
    const logged: { msg: string; code?: string; err?: { code?: string } }[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => logged.push(JSON.parse(line)) });
    fresh({ logger, attemptTimeoutMs: 2_000, chainDeadlineMs: 8_000 });
    rx.setMode("hold");
    const lease = settle();
    sender.start();
    const failedTries = () => logged.filter((l) => l.msg === "callback attempt failed");
    try {
      await until(() => of(lease).length === 1, "first try");
      clock.advance(1_999);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(failedTries().length, 0, "still waiting 1 ms before the try's timeout");
      clock.advance(1);
      await until(() => failedTries().length === 1, "first try timed out");
      assert.equal(failedTries()[0]?.code, "ERR_CALLBACK_ATTEMPT_TIMEOUT");
      await backoffArmed(1);
      clock.advance(1_000);
      await until(() => of(lease).length === 2, "second try after 1 s");
      clock.advance(2_000);
      await until(() => failedTries().length === 2, "second try timed out");
      // Sleeping toward a third try at 10 s: the chain's 8 s deadline ends it first.
      await backoffArmed(2);
      clock.advance(3_000);
      await until(
        () => logged.some((l) => l.msg === "callback delivery deadline reached; left to the replay loop"),
        "chain deadline",
      );
      const chainEnd = logged.find((l) => l.msg.startsWith("callback delivery deadline"));
      assert.equal(chainEnd?.err?.code, "ERR_CALLBACK_DELIVERY_TIMEOUT");
      assert.equal(of(lease).length, 2, "no third try past the deadline");
      assert.equal(journal.outboxSize(), 1, "the row waits for the replay");
    } finally {
      rx.releaseHeld(200);
      rx.setMode(200);
      await stop();
    }
  });

  it(`sends at most ${CALLBACK_CONCURRENCY} leases at once`, async () => {
    fresh();
    rx.setMode("hold");
    const leases = Array.from({ length: CALLBACK_CONCURRENCY + 4 }, () => settle());
    sender.start();
    try {
      // With every slot taken the sender is at rest: nothing starts until a request ends.
      await until(
        () =>
          rx.held() === CALLBACK_CONCURRENCY &&
          sender.load.inFlight === CALLBACK_CONCURRENCY &&
          sender.load.waiting === 4,
        `${CALLBACK_CONCURRENCY} in flight, 4 waiting for a slot`,
      );
      assert.equal(rx.held(), CALLBACK_CONCURRENCY);
      rx.setMode(200);
      rx.releaseHeld(200);
      await until(() => journal.outboxSize() === 0, "all delivered");
      assert.ok(leases.every((l) => of(l).length >= 1));
    } finally {
      rx.setMode(200);
      await stop();
    }
  });

  it("a woken row goes out only after the fsync that covers it (one wait, one fill per fsync)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-outbox-fsync-"));
    // What the journal said about durability at the moment each request left.
    const durableWhenSent: boolean[] = [];
    class Probe extends Agent {
      override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
        durableWhenSent.push(journal.allDurable);
        return super.dispatch(opts, handler);
      }
    }
    const dispatcher = new Probe();
    fresh({ dispatcher }, join(dir, "journal.db"));
    sender.start();
    try {
      await until(() => sender.load.inFlight === 0, "the start-up drain found nothing");
      const leases = Array.from({ length: 5 }, () => settle());
      for (const l of leases) sender.wake(l);
      assert.equal(journal.allDurable, false, "written in this turn, not on disk yet");
      await until(() => journal.outboxSize() === 0, "all delivered");
      assert.ok(leases.every((l) => of(l).length === 1));
      assert.deepEqual(durableWhenSent, [true, true, true, true, true]);
    } finally {
      await stop();
      await dispatcher.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
