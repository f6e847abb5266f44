import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type Launched, runFred } from "../../support/index.ts";
import { TenantKey } from "../api/tenant-client.ts";
import { type MockReady, SIDS, Stack } from "../e2e/stack.ts";

/**
 * Retiring a backend whose storage is lost: mock-2 (the only backend serving
 * docker-medium) holds an ACTIVE lease when it is lost. The retire tool records the loss
 * offline; providerd then closes the lease on chain with BackendStorageLost, answers its
 * reads 410 backend_storage_lost, and prunes the row on the pass after the lease ended.
 */
const stack = new Stack();
let lostMock: Launched<MockReady> | undefined;

before(async () => {
  await stack.start(undefined, (s) => {
    s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-medium")] }];
  });
  await stack.startProviderd();
});

after(async () => {
  await lostMock?.stop();
  await stack.close();
});

function retire(...args: string[]) {
  return runFred(["placement", "retire-backend", "--config", stack.configPath, "--name", "mock-2", ...args]);
}

function refusal(r: { code: number | null; stdout: string }): string {
  assert.equal(r.code, 1);
  const out = JSON.parse(r.stdout) as { ok: false; code: string; error: string };
  assert.equal(out.code, "ERR_PLACEMENT_MEMBERSHIP_REFUSED");
  return out.error;
}

function placementOf(lease: string) {
  const store = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return store.placements.placement(lease);
  } finally {
    store.close();
  }
}

describe("fred placement retire-backend --lost", () => {
  it("ends the lost backend's leases on chain, answers 410, and prunes the rows once ended", async () => {
    const [kept] = await stack.createLeases(1, "docker-small");
    const [doomed] = await stack.createLeases(1, "docker-medium");
    await stack.waitState([kept!, doomed!], "LEASE_STATE_ACTIVE");
    assert.equal(placementOf(doomed!)?.owner, "mock-2");
    await stack.stopProviderd();

    assert.match(refusal(await retire()), /mock-2 is still in the config/);
    // mock-2's storage is gone: it leaves the config and its process stops.
    lostMock = stack.mocks[1];
    stack.mocks = [stack.mocks[0]!];
    stack.writeConfig();
    await lostMock!.stop();

    assert.match(
      refusal(await retire()),
      new RegExp(`still has 1 lease\\(s\\).*${doomed}.*--lost --confirm`),
    );
    assert.match(
      refusal(await retire("--lost", "--confirm", SIDS[0]!)),
      /--confirm must be backend mock-2's pinned storage ID/,
    );
    const r = await retire("--lost", "--confirm", SIDS[1]!);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { action: string; leases: string[]; backup: string };
    assert.equal(out.action, "marked_lost");
    assert.deepEqual(out.leases, [doomed]);

    await stack.startProviderd();
    await stack.waitState([doomed!], "LEASE_STATE_CLOSED");
    assert.equal((await stack.tenant.getLease(doomed!))?.closureReason, "BackendStorageLost");
    assert.equal(await stack.leaseState(kept!), "LEASE_STATE_ACTIVE");

    const key = new TenantKey(stack.account("tenant1").private_key_hex);
    const provision = await fetch(`${stack.api}/v1/leases/${doomed}/provision`, {
      headers: { authorization: `Bearer ${key.access(doomed!)}` },
    });
    assert.equal(provision.status, 410);
    assert.deepEqual(await provision.json(), {
      error: "the storage that held this lease is permanently lost",
      code: 410,
      reason: "backend_storage_lost",
    });
    const status = await fetch(`${stack.api}/v1/leases/${doomed}/status`, {
      headers: { authorization: `Bearer ${key.access(doomed!)}` },
    });
    assert.equal(status.status, 200);
    const body = (await status.json()) as { provision_status: string; reason: string };
    assert.deepEqual([body.provision_status, body.reason], ["failed", "BackendStorageLost"]);
    assert.equal(placementOf(doomed!)?.owner, "mock-2", "the row stays until a pass sees the lease ended");

    // The next sweep's lost-backend pass reads the lease ended and prunes its row.
    const sweep = await runFred(["providerd", "reconcile", "-c", stack.configPath]);
    assert.equal(sweep.code, 0, sweep.stderr);
    assert.equal(placementOf(doomed!), undefined);
    assert.equal(placementOf(kept!)?.owner, "mock-1");

    // Nothing names mock-2 any more: an ordinary retirement forgets its pin.
    await stack.stopProviderd();
    const done = await retire();
    assert.equal(done.code, 0, done.stderr);
    assert.equal(JSON.parse(done.stdout).action, "pin_removed");
    await stack.startProviderd();
  });
});
