import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { verifyRequest } from "../../src/auth/hmac.ts";
import { verifyTenantToken } from "../../src/auth/token.ts";
import { LeasePacer, mixedKind, requestSource } from "../../src/cli/loadtest-scenarios.ts";
import { ManualClock } from "../../src/core/clock.ts";

/** The scenarios' request plans in-process, over a ManualClock (the process-level test is loadtest.test.ts). */
const LEASES = ["6ba7b811-9dad-41d1-80b4-00c04fd430c8", "6ba7b812-9dad-41d1-80b4-00c04fd430c8"];
const KEY = Buffer.from("11".repeat(32), "hex");

describe("LeasePacer", () => {
  it("hands each lease out at most once per second, never in the second the run started", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
    const pacer = new LeasePacer(LEASES, clock);
    const start = Math.floor(clock.now() / 1000);
    const signal = new AbortController().signal;
    const taken: string[] = [];
    for (let i = 0; i < 6; i++) {
      const next = pacer.take(signal);
      // Each wait ends at the next second boundary; advancing fires exactly that timer.
      while (clock.pendingTimers > 0) clock.advance(1000 - (clock.now() % 1000));
      const got = await next;
      assert.ok(got !== undefined);
      assert.ok(got.timestamp > start, "the start second is never used");
      taken.push(`${got.lease}@${got.timestamp}`);
    }
    assert.equal(new Set(taken).size, 6, taken.join(" "));
    assert.deepEqual(
      taken.map((t) => Number(t.split("@")[1]) - start),
      [1, 1, 2, 2, 3, 3],
    );
  });

  it("gives up when the run's signal ends while it waits", async () => {
    const clock = new ManualClock();
    const pacer = new LeasePacer(LEASES, clock);
    const stop = new AbortController();
    const next = pacer.take(stop.signal);
    stop.abort();
    assert.equal(await next, undefined);
  });
});

describe("scenario requests", () => {
  it("mixed is exactly 40/60, or 40/50/10 with callbacks", () => {
    const count = (withCallbacks: boolean) => {
      const kinds: Record<string, number> = {};
      for (let n = 0; n < 100; n++)
        kinds[mixedKind(n, withCallbacks)] = (kinds[mixedKind(n, withCallbacks)] ?? 0) + 1;
      return kinds;
    };
    assert.deepEqual(count(false), { payload: 40, connection: 60 });
    assert.deepEqual(count(true), { payload: 40, connection: 50, callback: 10 });
  });

  it("payload uploads carry the exact bytes and a payload token bound to their SHA-256", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const bytes = Buffer.from('{"image":"nginx"}');
    const metaHash = "a".repeat(64);
    const next = requestSource({
      scenario: "payload",
      clock,
      leases: [{ uuid: LEASES[0]! }, { uuid: LEASES[1]!, payload: { bytes, metaHash } }],
      callbacks: [],
      tenantKey: KEY,
      bech32Prefix: "manifest",
    });
    const req = await next(new AbortController().signal);
    assert.equal(req?.path, `/v1/leases/${LEASES[1]}/data`);
    assert.equal(req?.body, bytes);
    const token = (req?.headers.authorization ?? "").replace(/^Bearer /, "");
    const claims = verifyTenantToken(token, { nowMs: clock.now(), leaseUuid: LEASES[1]! });
    assert.deepEqual([claims.kind, claims.metaHash], ["payload", metaHash]);
  });

  it("callbacks are sent to the recorded URI with its body, signed over both", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const secret = Buffer.from("s".repeat(32));
    const cb = {
      uri: "/callbacks/provision?operation_id=0f8c2d1e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
      body: Buffer.from("{}"),
    };
    const next = requestSource({
      scenario: "callback",
      clock,
      leases: [],
      callbacks: [cb],
      callbackSecret: secret,
      bech32Prefix: "manifest",
    });
    const req = await next(new AbortController().signal);
    assert.deepEqual([req?.method, req?.path, req?.body], ["POST", cb.uri, cb.body]);
    const index = verifyRequest({
      header: req?.headers["x-fred-signature"],
      method: "POST",
      uri: cb.uri,
      body: cb.body,
      nowMs: clock.now(),
      secrets: [secret],
    });
    assert.equal(index, 0);
  });
});
