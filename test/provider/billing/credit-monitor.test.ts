import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import type { ChainPort, CreditEstimate } from "../../../src/chain/port.ts";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import { FredError } from "../../../src/core/errors.ts";
import { CreditMonitor, createBillingMetrics } from "../../../src/provider/billing/index.ts";
import { clientFor, createLeases } from "../../chain/devnet/helpers.ts";
import { type Devnet, devnet } from "../../support/index.ts";
import { manualClock, providerClient, quiet } from "./harness.ts";

/**
 * The credit monitor against a real devnet (leases, closes and credit estimates are the
 * chain's), on a ManualClock. A node that lags or fails is the one thing staged: `node`
 * answers credit reads with a stale zero balance or an error when told to, the way a
 * lagging or unreachable RPC node would, and the chain's own answer otherwise.
 */
const GRACE_MS = 60_000;
const RETRY_MS = 10_000;
const INTERVAL_MS = 30_000;

type Answer = "chain" | "zero" | "error";

class StagedNode {
  readonly script: Answer[] = [];
  constructor(readonly chain: CosmosChain) {}
  /** Listings asked for, by kind (a one-tenant check must not list the whole provider). */
  readonly listings = { provider: 0, tenant: 0 };
  port(): Pick<ChainPort, "leasesByProvider" | "leasesByTenant" | "creditEstimate" | "closeLeases"> {
    return {
      leasesByProvider: (...a) => {
        this.listings.provider++;
        return this.chain.leasesByProvider(...a);
      },
      leasesByTenant: (...a) => {
        this.listings.tenant++;
        return this.chain.leasesByTenant(...a);
      },
      closeLeases: (...a) => this.chain.closeLeases(...a),
      creditEstimate: async (tenant, signal): Promise<CreditEstimate | undefined> => {
        const answer = this.script.shift() ?? "chain";
        if (answer === "error")
          throw new FredError("ERR_CHAIN_UNAVAILABLE", "node unreachable", { retryable: true });
        const real = await this.chain.creditEstimate(tenant, signal);
        if (answer === "chain" || real === undefined) return real;
        return { ...real, balance: real.balance.map((c) => ({ ...c, amount: "0" })), estimatedSeconds: 0n };
      },
    };
  }
}

let dn: Devnet;
let provider: CosmosChain;

before(async () => {
  dn = await devnet({ blockTime: "100ms", tenants: 5 });
  provider = await providerClient(dn);
});

after(async () => {
  provider?.disconnect();
  await dn?.stop();
});

async function activeLeasesOf(tenantAccount: string, n: number): Promise<string[]> {
  const tenant = await clientFor(dn, tenantAccount);
  try {
    const leases = await createLeases(tenant, dn, n);
    const acks = await provider.acknowledge(leases);
    assert.ok(acks.every((o) => o.status === "acknowledged"));
    return leases;
  } finally {
    tenant.disconnect();
  }
}

function monitorOver(node: StagedNode, registry = new Registry()) {
  const clock = manualClock();
  const closed: string[] = [];
  const low: [string, number][] = [];
  const closing: [string, string][] = [];
  const monitor = new CreditMonitor({
    chain: node.port(),
    providerUuid: dn.keys.provider_uuid,
    clock,
    logger: quiet,
    metrics: createBillingMetrics(registry),
    intervalMs: INTERVAL_MS,
    retryIntervalMs: RETRY_MS,
    errorThreshold: 2,
    gracePeriodMs: GRACE_MS,
    notices: {
      creditLow: (lease, at) => low.push([lease, at]),
      closing: (lease, reason) => closing.push([lease, reason]),
    },
    leaseClosed: (lease) => closed.push(lease),
  });
  return { clock, monitor, closed, low, closing, registry };
}

const signal = new AbortController().signal;

async function states(uuids: readonly string[]): Promise<string[]> {
  return Promise.all(uuids.map(async (u) => (await provider.getLease(u))?.state ?? "missing"));
}

describe("credit monitor (devnet)", () => {
  it("closes an empty tenant's leases only once the balance stayed empty for the grace period", async () => {
    const leases = await activeLeasesOf("tenant2", 2);
    const node = new StagedNode(provider);
    const { clock, monitor, closed, closing, registry } = monitorOver(node);
    node.script.push("zero", "zero", "zero");
    const due = await monitor.checkTenant(dn.account("tenant2").address, signal);
    assert.equal(due, clock.now() + RETRY_MS, "deferring: re-checked after credit_check_retry_interval");
    assert.deepEqual(node.listings, { provider: 0, tenant: 1 }, "one tenant's check lists only its leases");
    clock.advance(GRACE_MS - 1);
    await monitor.checkAll(signal);
    assert.deepEqual(await states(leases), ["LEASE_STATE_ACTIVE", "LEASE_STATE_ACTIVE"]);
    assert.deepEqual(closed, []);
    clock.advance(1);
    await monitor.checkAll(signal);
    assert.deepEqual(await states(leases), ["LEASE_STATE_CLOSED", "LEASE_STATE_CLOSED"]);
    for (const u of leases) assert.equal((await provider.getLease(u))?.closureReason, "credit exhausted");
    assert.deepEqual([...closed].sort(), [...leases].sort(), "handed to the lifecycle's close path");
    assert.deepEqual(
      closing.map(([, r]) => r),
      ["credit exhausted", "credit exhausted"],
    );
    const text = await registry.metrics();
    assert.match(text, /^fred_credit_closures_total 2$/m);
    assert.match(text, /^fred_credit_deferrals_total 2$/m);
    assert.match(text, /^fred_credit_checks_total\{outcome="empty"\} 3$/m);
  });

  it("a stale zero read followed by a real balance closes nothing, and the grace starts over", async () => {
    const leases = await activeLeasesOf("tenant3", 1);
    const node = new StagedNode(provider);
    const { clock, monitor, closed } = monitorOver(node);
    const tenant = dn.account("tenant3").address;
    node.script.push("zero", "chain", "zero");
    await monitor.checkTenant(tenant, signal);
    clock.advance(GRACE_MS * 2);
    await monitor.checkTenant(tenant, signal); // the node caught up: credit is there
    clock.advance(GRACE_MS * 2);
    const due = await monitor.checkTenant(tenant, signal); // a new zero starts a new grace period
    assert.equal(due, clock.now() + RETRY_MS);
    assert.deepEqual(closed, []);
    assert.deepEqual(await states(leases), ["LEASE_STATE_ACTIVE"]);
    await provider.closeLeases(leases, "test done");
  });

  it("read errors close nothing; from the threshold on, the re-check comes early", async () => {
    const leases = await activeLeasesOf("tenant4", 1);
    const node = new StagedNode(provider);
    const { clock, monitor, closed, registry } = monitorOver(node);
    const tenant = dn.account("tenant4").address;
    node.script.push("error", "error", "error");
    assert.equal(await monitor.checkTenant(tenant, signal), undefined, "one error: the normal schedule");
    clock.advance(GRACE_MS * 2);
    assert.equal(await monitor.checkTenant(tenant, signal), clock.now() + RETRY_MS, "threshold 2 reached");
    clock.advance(GRACE_MS * 2);
    assert.equal(await monitor.checkTenant(tenant, signal), clock.now() + RETRY_MS);
    assert.deepEqual(closed, []);
    assert.deepEqual(await states(leases), ["LEASE_STATE_ACTIVE"]);
    assert.match(await registry.metrics(), /^fred_credit_checks_total\{outcome="error"\} 3$/m);
    await provider.closeLeases(leases, "test done");
  });

  it("warns once per lease when the chain's horizon drops below 24 h, and shows it for GET status", async () => {
    // 30 × docker-large burns 12 000 upwr/s: 1e9 upwr last 83 333 s, under a day.
    const tenant = await clientFor(dn, "tenant5");
    const skuUuid = dn.keys.skus.find((s) => s.name === "docker-large")!.uuid;
    const res = await tenant.send([
      {
        typeUrl: MsgCreateLease.typeUrl,
        value: MsgCreateLease.fromPartial({ tenant: tenant.address, items: [{ skuUuid, quantity: 30n }] }),
      },
    ]);
    tenant.disconnect();
    const lease = MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
    await provider.acknowledge([lease]);
    const { clock, monitor, low } = monitorOver(new StagedNode(provider));
    const address = dn.account("tenant5").address;
    const due = await monitor.checkTenant(address, signal);
    const est = (await provider.creditEstimate(address))!;
    const secondsLeft = BigInt(est.balance[0]!.amount) / 12_000n;
    assert.ok(secondsLeft < 86_400n);
    const depletes = clock.now() + Number(secondsLeft) * 1000;
    assert.deepEqual(low, [[lease, depletes]]);
    assert.equal(due, depletes - 10_000, "re-checked just before the credit runs out");
    await monitor.checkTenant(address, signal);
    assert.equal(low.length, 1, "at most once per threshold per lease");
    assert.deepEqual(await monitor.status(address), {
      balance: `${est.balance[0]!.amount}upwr`,
      burn_rate_per_hour: `${12_000 * 3600}upwr`,
      depletes_at: new Date(depletes).toISOString(),
    });
    await provider.closeLeases([lease], "test done");
  });

  it("checks and closes a billing-only lease like any other", async () => {
    const t = await clientFor(dn, "tenant1");
    const [lease] = await createLeases(t, dn, 1, "billing-only");
    t.disconnect();
    await provider.acknowledge([lease!]);
    const node = new StagedNode(provider);
    const { clock, monitor, closed } = monitorOver(node);
    node.script.push("zero", "zero");
    await monitor.checkAll(signal);
    assert.ok(monitor.holds(dn.account("tenant1").address));
    clock.advance(GRACE_MS);
    await monitor.checkAll(signal);
    assert.deepEqual(closed, [lease]);
    assert.equal((await provider.getLease(lease!))?.closureReason, "credit exhausted");
  });
});
