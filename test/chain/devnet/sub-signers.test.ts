import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { cosmosHdPath, privateKeyFromMnemonic } from "../../../src/auth/keys.ts";
import type { CosmosChain } from "../../../src/chain/cosmos/adapter.ts";
import { signerFromKey } from "../../../src/chain/cosmos/signer.ts";
import { deriveSubSigners } from "../../../src/chain/cosmos/sub-signers.ts";
import { AckBatcher } from "../../../src/chain/tx/ack-batcher.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { SignerSupervisor } from "../../../src/provider/signers/index.ts";
import { type Devnet, devnet } from "../../support/index.ts";
import { clientFor, createLeases } from "./helpers.ts";

describe("authz sub-signer lanes against a real devnet", () => {
  let dn: Devnet;
  let provider: CosmosChain;
  let tenant: CosmosChain;
  before(async () => {
    dn = await devnet({ blockTime: "200ms", tenants: 1 });
    provider = await clientFor(dn, "provider");
    tenant = await clientFor(dn, "tenant1");
  });
  after(async () => {
    provider?.disconnect();
    tenant?.disconnect();
    await dn?.stop();
  });

  it("derives sub-signers at m/44'/118'/i'/0/0 (i ≥ 1) and refuses silly counts", () => {
    const mnemonic = dn.account("provider").mnemonic;
    const subs = deriveSubSigners(mnemonic, 2);
    assert.equal(subs[1]?.address, signerFromKey(privateKeyFromMnemonic(mnemonic, cosmosHdPath(2))).address);
    assert.notEqual(subs[0]?.address, dn.account("provider").address);
    assert.throws(
      () => deriveSubSigners(mnemonic, -1),
      (e) => isFredError(e, "ERR_CONFIG"),
    );
  });

  it("grants once, tops up, then sends lease txs through MsgExec on parallel lanes", async () => {
    const subs = deriveSubSigners(dn.account("provider").mnemonic, 2);
    const funding = { minBalance: "1000000umfx", topUpAmount: "5000000umfx" };
    const laneSet = provider.enableSubSigners(subs, funding);
    const counts = ({ grantsSent, toppedUp }: { grantsSent: number; toppedUp: number }) => ({
      grantsSent,
      toppedUp,
    });
    assert.deepEqual(counts(await laneSet.converge()), { grantsSent: 6, toppedUp: 2 });
    assert.deepEqual(counts(await laneSet.converge()), { grantsSent: 0, toppedUp: 0 });
    assert.deepEqual(
      laneSet.view().map((l) => l.state),
      ["active", "active"],
    );
    const leases = await createLeases(tenant, dn, 4);
    const [a, b] = await Promise.all([
      provider.acknowledge(leases.slice(0, 2), undefined, 0),
      provider.acknowledge(leases.slice(2), undefined, 1),
    ]);
    assert.deepEqual(
      [...(a ?? []), ...(b ?? [])].map((o) => o.status),
      ["acknowledged", "acknowledged", "acknowledged", "acknowledged"],
    );
    const lanes = laneSet.pipelines();
    assert.equal(lanes.length, 2);
    assert.deepEqual(
      lanes.map((p) => p.owner.cached?.sequence),
      [1, 1],
      "each sub-signer sent exactly one tx",
    );
    for (const l of leases) assert.equal((await provider.getLease(l))?.state, "LEASE_STATE_ACTIVE");
    // Already-active through a lane: a success, sorted out per lease.
    const again = await provider.acknowledge([leases[0] as string], undefined, 1);
    assert.equal(again[0]?.status, "already_done");
    // The batcher spreads its lanes over the sub-signers.
    const more = await createLeases(tenant, dn, 2);
    const batcher = new AckBatcher({
      chain: provider,
      clock: systemClock,
      lanes: 2,
      maxBatch: 1,
      maxWaitMs: 0,
    });
    const outs = await Promise.all(
      more.map((leaseUuid) => batcher.submit({ kind: "acknowledge", leaseUuid })),
    );
    await batcher.close();
    assert.deepEqual(
      outs.map((o) => o.status),
      ["acknowledged", "acknowledged"],
    );
  });

  it("the supervisor re-checks balances on its interval (Clock-driven)", async () => {
    const clock = new ManualClock();
    const laneSet = provider.lanes;
    assert.ok(laneSet !== undefined);
    let topped = -1;
    const supervisor = new SignerSupervisor({
      clock,
      intervalMs: 3_600_000,
      converge: async (signal) => {
        const report = await laneSet.converge(signal);
        topped = report.toppedUp;
        return report;
      },
    });
    await supervisor.start();
    topped = -1;
    clock.advance(3_599_999);
    assert.equal(supervisor.passes.get("converged"), 1);
    const pass = once(supervisor, "pass");
    clock.advance(1);
    assert.equal((await pass)[0], "converged");
    assert.equal(supervisor.passes.get("converged"), 2);
    assert.equal(topped, 0, "balances are above the floor");
    await supervisor.stop();
    assert.equal(clock.pendingTimers, 0);
  });
});
