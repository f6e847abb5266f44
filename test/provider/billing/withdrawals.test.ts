import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { createBilling } from "../../../src/provider/billing/index.ts";
import { advanceTime, clientFor, createLeases } from "../../chain/devnet/helpers.ts";
import { type Devnet, devnet } from "../../support/index.ts";
import {
  bankBalance,
  billingConfig,
  blockTimeNs,
  manualClock,
  next,
  providerClient,
  quiet,
} from "./harness.ts";

/**
 * Withdrawals against a real devnet: the scheduler (on a ManualClock) settles every ACTIVE
 * lease page by page, and the provider's payout balance rises by exactly what the leases
 * owe, computed here from their price and the block times alone.
 */
const PRICE_PER_S = 100n; // docker-small: 360 000 upwr per hour
const INTERVAL_MS = 60_000;

let dn: Devnet;
let tenant: CosmosChain;
let provider: CosmosChain;

before(async () => {
  dn = await devnet({ blockTime: "100ms" });
  tenant = await clientFor(dn, "tenant1");
  provider = await providerClient(dn, { withdrawLimit: 2 });
});

after(async () => {
  tenant?.disconnect();
  provider?.disconnect();
  await dn?.stop();
});

function billingOver(chain: CosmosChain, registry: Registry) {
  const clock = manualClock();
  const { scheduler } = createBilling({
    config: billingConfig(dn.keys.provider_uuid, { withdrawIntervalMs: INTERVAL_MS }),
    chain,
    clock,
    logger: quiet,
    registry,
  });
  return { clock, billing: scheduler };
}

async function metric(registry: Registry, line: RegExp): Promise<number> {
  const m = line.exec(await registry.metrics());
  return m === null ? 0 : Number(m[1]);
}

describe("withdrawals (devnet + billing scheduler)", () => {
  it("settles 7 leases over 4 pages of 2; the payout rises by exactly what they owe", async () => {
    const registry = new Registry();
    const { clock, billing } = billingOver(provider, registry);
    // The startup cycle finds nothing to settle and sends nothing.
    const first = await next(billing, "withdraw", () => billing.start());
    assert.equal(first[0].outcome, "skipped");

    const leases = await createLeases(tenant, dn, 7);
    const acks = await provider.acknowledge(leases);
    assert.ok(acks.every((o) => o.status === "acknowledged"));
    const ackNs = await blockTimeNs(dn.rpc, acks[0]!.height!);
    await advanceTime(dn, provider, 100);
    const payout = dn.account("provider").address;
    const before = await bankBalance(dn.rpc, payout, "upwr");

    const [report] = await next(billing, "withdraw", () => clock.advance(INTERVAL_MS));
    assert.equal(report.outcome, "complete");
    assert.equal(report.heights.length, 4, "⌈7 / withdraw_limit 2⌉ pages");
    assert.equal(report.settled, 7n);
    assert.deepEqual(report.failedLeaseUuids, []);

    // The chain walks ACTIVE leases in UUID order, withdraw_limit per page.
    const sorted = [...leases].sort();
    let owed = 0n;
    for (const [i, _lease] of sorted.entries()) {
      const pageNs = await blockTimeNs(dn.rpc, report.heights[Math.floor(i / 2)]!);
      owed += PRICE_PER_S * ((pageNs - ackNs) / 1_000_000_000n);
    }
    const after = await bankBalance(dn.rpc, payout, "upwr");
    assert.equal(after - before, owed, "payout rise = Σ price × whole seconds since the acknowledgement");
    assert.deepEqual(report.amounts, [{ denom: "upwr", amount: owed.toString() }]);
    assert.equal(await metric(registry, /^fred_withdraw_leases_settled_total (\d+)$/m), 7);
    assert.equal(
      await metric(registry, /^fred_withdrawn_amount_total\{denom="upwr"\} (\d+)$/m),
      Number(owed),
    );
    assert.equal(await metric(registry, /^fred_withdraw_cycles_total\{outcome="complete"\} (\d+)$/m), 1);
    await billing.stop();
    await provider.closeLeases(leases, "test done");
  });

  it("reports a cycle cut at max_withdraw_iterations as incomplete and starts over next cycle", async () => {
    const capped = await providerClient(dn, { withdrawLimit: 2, maxWithdrawIterations: 2 });
    try {
      const registry = new Registry();
      const { clock, billing } = billingOver(capped, registry);
      const leases = await createLeases(tenant, dn, 5);
      await capped.acknowledge(leases);
      await advanceTime(dn, capped, 10);
      const [startup] = await next(billing, "withdraw", () => billing.start());
      assert.equal(startup.outcome, "incomplete");
      assert.equal(startup.heights.length, 2);
      assert.equal(startup.settled, 4n);
      assert.equal(await metric(registry, /^fred_withdraw_cycles_total\{outcome="incomplete"\} (\d+)$/m), 1);
      await advanceTime(dn, capped, 10);
      const [again] = await next(billing, "withdraw", () => clock.advance(INTERVAL_MS));
      assert.equal(again.outcome, "incomplete", "each cycle starts from the first lease");
      assert.equal(again.settled, 4n);
      await billing.stop();
      await capped.closeLeases(leases, "test done");
    } finally {
      capped.disconnect();
    }
  });

  it("settles a billing-only lease like any other", async () => {
    const registry = new Registry();
    const { clock, billing } = billingOver(provider, registry);
    await next(billing, "withdraw", () => billing.start());
    const [lease] = await createLeases(tenant, dn, 1, "billing-only");
    const [ack] = await provider.acknowledge([lease!]);
    const ackNs = await blockTimeNs(dn.rpc, ack!.height!);
    await advanceTime(dn, provider, 50);
    const [report] = await next(billing, "withdraw", () => clock.advance(INTERVAL_MS));
    assert.equal(report.outcome, "complete");
    assert.equal(report.settled, 1n);
    const pageNs = await blockTimeNs(dn.rpc, report.heights[0]!);
    // billing-only: 36 000 upwr per hour, 10 per second.
    const owed = 10n * ((pageNs - ackNs) / 1_000_000_000n);
    assert.deepEqual(report.amounts, [{ denom: "upwr", amount: owed.toString() }]);
    await billing.stop();
    await provider.closeLeases([lease!], "test done");
  });
});
