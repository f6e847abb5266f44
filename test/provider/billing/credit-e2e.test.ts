import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type CosmosChain, openCosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import { leaseOnNewProvider } from "../../chain/devnet/helpers.ts";
import { until } from "../../support/index.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";

/**
 * The money loop through real processes: a devnet (the faucet as module authority), mock
 * backends and providerd. Our lease's reservation is used up by providerd's own startup
 * withdrawal; then a second provider's lease of the same tenant drains the credit and is
 * auto-closed by the chain. providerd's watcher checks the tenant at once, finds the
 * balance empty, waits out the grace period, closes our lease with `credit exhausted` and
 * deprovisions it on its backend.
 */
const stack = new Stack();
let authority: CosmosChain;
let operator: CosmosChain;

function client(name: string): Promise<CosmosChain> {
  return openCosmosChain({
    rpcUrl: stack.devnet.rpc,
    signer: signerFromKey(Buffer.from(stack.account(name).private_key_hex, "hex")),
    txPollIntervalMs: 50,
    txTimeoutMs: 20_000,
  });
}

async function control(method: string, params: Record<string, unknown> = {}): Promise<void> {
  const res = await fetch(stack.devnet.rpc, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
}

/** Moves the chain's time forward and commits a block that carries the jump. */
async function advance(seconds: number): Promise<void> {
  await control("devnet_advance_time", { seconds });
  await control("devnet_produce_block");
}

before(async () => {
  await stack.start(
    (s) => {
      const served = mockSkus(s.sku("docker-small"));
      return [{ MOCK_BACKEND_SKUS: served }, { MOCK_BACKEND_SKUS: served }];
    },
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-small")] }];
      s.extraConfig = {
        withdraw_interval: "1h",
        credit_check_zero_grace_period: "1s",
        credit_check_retry_interval: "1s",
      };
    },
  );
  // The module authority is read at start: restart the devnet (same home, same port) with it.
  await stack.devnet.restart({ env: { POA_ADMIN_ADDRESS: stack.account("faucet").address } });
  authority = await client("faucet");
  operator = await client("tenant2");
  await stack.startProviderd();
});

after(async () => {
  authority?.disconnect();
  operator?.disconnect();
  await stack.close();
});

async function otherProviderLease(): Promise<{ providerUuid: string; lease: string }> {
  const { providerUuid, lease } = await leaseOnNewProvider(authority, operator.address, stack.tenant);
  const [ack] = await operator.acknowledge([lease]);
  assert.equal(ack!.status, "acknowledged");
  return { providerUuid, lease };
}

describe("credit exhaustion end to end (devnet + providerd + mock backends)", () => {
  it("closes and deprovisions our lease once another provider drained the tenant's credit", async () => {
    const [ours] = await stack.createLeases(1, "docker-small");
    await stack.waitState([ours!], "LEASE_STATE_ACTIVE");
    assert.equal((await stack.workloads([ours!])).length, 1);
    const p2 = await otherProviderLease();

    // An hour on, providerd's startup withdrawal pays our lease its reserved hour.
    await stack.stopProviderd();
    await advance(3_600);
    const settledBefore = (await stack.tenant.getLease(ours!))?.lastSettledAt?.getTime() ?? 0;
    await stack.startProviderd();
    await until(
      async () => ((await stack.tenant.getLease(ours!))?.lastSettledAt?.getTime() ?? 0) > settledBefore,
      "providerd's startup withdrawal settled our lease",
    );
    assert.equal(await stack.leaseState(ours!), "LEASE_STATE_ACTIVE");

    // Far later, the other provider's withdrawal takes what is left and closes its lease.
    await advance(10_000_000);
    await operator.withdrawAll(p2.providerUuid);
    assert.equal(await stack.leaseState(p2.lease), "LEASE_STATE_CLOSED");
    const estimate = await stack.tenant.creditEstimate(stack.tenant.address);
    assert.ok(!(estimate?.balance ?? []).some((c) => BigInt(c.amount) > 0n), "the tenant's credit is empty");

    await stack.waitState([ours!], "LEASE_STATE_CLOSED");
    assert.equal((await stack.tenant.getLease(ours!))?.closureReason, "credit exhausted");
    await until(async () => (await stack.workloads([ours!])).length === 0, "our lease deprovisioned", {
      context: () => stack.providerd?.logTail() ?? "",
    });
    // The feed's lease_closed can start the deprovision before the close tx's own
    // confirmation (tx_poll_interval) reaches the monitor, which then counts it.
    await until(
      async () => /^fred_credit_closures_total 1$/m.test(await (await fetch(`${stack.api}/metrics`)).text()),
      "the closure counted",
    );
  });
});
