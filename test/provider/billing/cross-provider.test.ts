import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { EventFeed } from "../../../src/chain/events/feed.ts";
import { createBilling } from "../../../src/provider/billing/index.ts";
import { advanceTime, clientFor, createLeases, leaseOnNewProvider } from "../../chain/devnet/helpers.ts";
import { type Devnet, devnet } from "../../support/index.ts";
import { billingConfig, manualClock, next, providerClient, quiet } from "./harness.ts";

/**
 * The cross-provider depletion watcher against a real devnet: a second provider, created
 * through the module authority (the faucet, as POA_ADMIN_ADDRESS), leases to the same
 * tenant; when the chain auto-closes that lease for exhausted credit, our credit check of
 * the tenant runs at once. The billing scheduler's ManualClock never moves: the check
 * cannot be the scheduled one.
 */
let dn: Devnet;
let provider: CosmosChain;
let tenant: CosmosChain;
let other: CosmosChain;
let authority: CosmosChain;

before(async () => {
  dn = await devnet({ blockTime: "100ms", tenants: 2 });
  // The authority is read at start, and the dev keys exist once the home is initialised.
  await dn.restart({ env: { POA_ADMIN_ADDRESS: dn.account("faucet").address } });
  provider = await providerClient(dn);
  tenant = await clientFor(dn, "tenant1");
  other = await clientFor(dn, "tenant2"); // the second provider's operator key
  authority = await clientFor(dn, "faucet");
});

after(async () => {
  for (const c of [provider, tenant, other, authority]) c?.disconnect();
  await dn?.stop();
});

async function secondProviderLease(): Promise<{ providerUuid: string; lease: string }> {
  const operator = other.address;
  const { providerUuid, lease } = await leaseOnNewProvider(authority, operator, tenant);
  const [ack] = await other.acknowledge([lease]);
  assert.equal(ack!.status, "acknowledged");
  return { providerUuid, lease };
}

describe("cross-provider depletion watcher (devnet)", () => {
  it("another provider's auto-closed lease of our tenant triggers that tenant's check at once", async () => {
    const [ours] = await createLeases(tenant, dn, 1);
    await provider.acknowledge([ours!]);
    const p2 = await secondProviderLease();

    const feed = new EventFeed({
      url: `${dn.rpc.replace(/^http/, "ws")}/websocket`,
      providerUuid: dn.keys.provider_uuid,
      fetchBlockEvents: (height, signal) => provider.blockEvents(height, signal),
      logger: quiet,
    });
    const clock = manualClock();
    const billing = createBilling({
      config: billingConfig(dn.keys.provider_uuid),
      chain: provider,
      clock,
      logger: quiet,
      consumer: feed.subscribe("credit", 100),
    });
    try {
      feed.start();
      await feed.whenState("live");
      await next(billing.scheduler, "credit", () => billing.start());
      assert.ok(billing.monitor.holds(tenant.address), "the startup check saw the tenant's lease here");

      // 1e9 upwr of credit at 100 upwr/s last 1e7 s: past that, the second provider's
      // withdrawal finds the lease unable to pay and the chain auto-closes it.
      await advanceTime(dn, provider, 10_000_000);
      const checked = next(billing.scheduler, "credit");
      const summary = await other.withdrawAll(p2.providerUuid);
      assert.equal(summary.pages.length, 1);
      assert.equal((await other.getLease(p2.lease))?.state, "LEASE_STATE_CLOSED");
      const [run] = await checked;
      assert.deepEqual(run, { tenant: tenant.address, trigger: "event" });
      assert.equal(billing.scheduler.withdrawals, 1, "the check withdrew nothing (cadence guard)");
    } finally {
      await billing.stop();
      await feed.stop();
    }
  });
});
