import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { ChainPort, CreditEstimate, LeaseOutcome } from "../../../src/chain/port.ts";
import { CreditMonitor, createBillingMetrics, creditNotices } from "../../../src/provider/billing/index.ts";
import { chainLease, Harness } from "../api/harness.ts";
import { call } from "../api/tenant-client.ts";
import { WsClient, wsUrl } from "../api/ws-client.ts";
import { quiet } from "./harness.ts";

/**
 * What tenants see of the credit monitor: `credit` in GET status, and the credit_low and
 * closing notice frames on an event stream that opted in with `?notices=credit`. The
 * tenant API runs on a real listener with real websocket clients; the chain is faked at
 * its port (as in the tenant API's own tests), answering credit estimates from `estimate`.
 */
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000c1";
// Under the stream's 30 s ping interval: advancing the clock past it would need pongs.
const GRACE_MS = 20_000;
let h: Harness;
let monitor: CreditMonitor;
let estimate: CreditEstimate;
const closes: string[][] = [];

function credit(balance: bigint, perSecond = 100n): CreditEstimate {
  return {
    balance: [{ denom: "upwr", amount: balance.toString() }],
    ratePerSecond: [{ denom: "upwr", amount: perSecond.toString() }],
    estimatedSeconds: balance / perSecond,
    activeLeaseCount: 1n,
  };
}

beforeEach(async () => {
  h = await new Harness().start({ credit: (tenant, signal) => monitor.status(tenant, signal) });
  h.lease(LEASE);
  closes.length = 0;
  const chain: Pick<ChainPort, "leasesByProvider" | "leasesByTenant" | "creditEstimate" | "closeLeases"> = {
    leasesByProvider: async () => [chainLease(LEASE, h.tenant)],
    leasesByTenant: async () => [chainLease(LEASE, h.tenant)],
    creditEstimate: async () => estimate,
    closeLeases: async (uuids): Promise<LeaseOutcome[]> => {
      closes.push([...uuids]);
      return uuids.map((leaseUuid) => ({ leaseUuid, status: "closed" }));
    },
  };
  monitor = new CreditMonitor({
    chain,
    providerUuid: chainLease(LEASE, h.tenant).providerUuid,
    clock: h.clock,
    logger: quiet,
    metrics: createBillingMetrics(undefined),
    intervalMs: 60_000,
    retryIntervalMs: 10_000,
    errorThreshold: 3,
    gracePeriodMs: GRACE_MS,
    notices: creditNotices(h.api.hub),
  });
});

afterEach(async () => {
  await h.close();
});

const signal = new AbortController().signal;

function subscribe(query: string): Promise<WsClient> {
  const token = encodeURIComponent(h.token(LEASE));
  return new WsClient(wsUrl(h.url, `/v1/leases/${LEASE}/events?${query}&token=${token}`)).open();
}

describe("credit notices and the status credit field", () => {
  it("GET status carries the tenant's balance, burn per hour and depletion date", async () => {
    estimate = credit(360_000n * 30n); // 30 h at 100 upwr/s
    const res = await call(h.url, `/v1/leases/${LEASE}/status?include=credit`, h.token(LEASE));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.credit, {
      balance: "10800000upwr",
      burn_rate_per_hour: "360000upwr",
      depletes_at: new Date(h.clock.now() + 30 * 3_600_000).toISOString(),
    });
  });

  it("an opted-in stream gets credit_low below 24 h and below 1 h, then closing; others get none", async () => {
    const opted = await subscribe("notices=credit");
    const plain = await subscribe("notices=0");
    await opted.frame(1);
    await plain.frame(1);
    const tenant = h.tenant;

    estimate = credit(360_000n * 20n); // 20 h left
    await monitor.checkTenant(tenant, signal);
    await monitor.checkTenant(tenant, signal); // still under 24 h: no second frame
    const low = await opted.frame(2);
    assert.deepEqual(Object.keys(low).sort(), ["depletes_at", "lease_uuid", "seq", "type"]);
    assert.equal(low.type, "credit_low");
    assert.equal(low.lease_uuid, LEASE);
    assert.equal(low.depletes_at, new Date(h.clock.now() + 20 * 3_600_000).toISOString());

    estimate = credit(360_000n / 2n); // 30 min left
    await monitor.checkTenant(tenant, signal);
    const lower = await opted.frame(3);
    assert.equal(lower.type, "credit_low");
    assert.equal(lower.depletes_at, new Date(h.clock.now() + 30 * 60_000).toISOString());
    assert.ok((lower.seq as number) > (low.seq as number));

    estimate = credit(0n);
    await monitor.checkTenant(tenant, signal);
    h.clock.advance(GRACE_MS);
    await monitor.checkTenant(tenant, signal);
    assert.deepEqual(closes, [[LEASE]]);
    const closing = await opted.frame(4);
    assert.deepEqual(
      { type: closing.type, lease_uuid: closing.lease_uuid, reason: closing.reason },
      { type: "closing", lease_uuid: LEASE, reason: "credit exhausted" },
    );
    assert.ok((closing.seq as number) > (lower.seq as number));
    // The plain stream saw only its snapshot; a ping round-trip proves nothing else is on the way.
    await plain.roundTrip();
    assert.equal(plain.frames.length, 1);
    opted.close();
    plain.close();
  });
});
