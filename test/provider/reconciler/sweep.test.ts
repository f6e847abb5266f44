import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { signedClient } from "../../backend/kit/signed-client.ts";
import { until } from "../../support/index.ts";
import { SECRETS, Stack } from "../e2e/stack.ts";
import { backendInventory } from "./inventory.ts";

/**
 * The reconciler in providerd, with real processes (devnet, one mock backend, providerd):
 * a sweep every 2 s repairs what no event reports. An ACTIVE lease whose workload vanished
 * (the mock's substrate records are wiped across a restart, as a crashed host loses its
 * containers), or lost behind the backend's back (`POST /_mock/lose`), is provisioned again
 * on its owner, with a new operation id; a lease closed while providerd was down
 * has its workload torn down after the restart.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";

before(async () => {
  await stack.start(
    () => [{}],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }];
      s.extraConfig = { reconciliation_interval: "2s" };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

const inventory = () => backendInventory(stack);

function withStore<T>(fn: (s: PlacementStore) => T): T {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

/** Waits for the lease to be confirmed again under a new operation, and its workload ready. */
async function reprovisioned(lease: string, firstLifecycleId: string | undefined): Promise<void> {
  await until(
    () => {
      const p = withStore((s) => s.placements.placement(lease));
      return p?.lifecycleId !== undefined && p.lifecycleId !== firstLifecycleId;
    },
    "the lease confirmed again under a new operation",
    { timeoutMs: 60_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
  );
  await until(
    async () => (await inventory()).find((p) => p.leaseUuid === lease)?.status === "ready",
    "the re-provisioned workload ready",
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

async function metric(name: string, label: string): Promise<number> {
  const text = await (await fetch(`${stack.api}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${label}}`));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

describe("the reconciler in providerd (devnet + providerd + mock backend)", () => {
  it("re-provisions an ACTIVE lease whose workload vanished, on its owner", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], ACTIVE);
    const first = withStore((s) => s.placements.placement(lease!));
    assert.equal(first?.owner, "mock-1");
    assert.notEqual(first?.lifecycleId, undefined);

    // The workload vanishes: the journal keeps the lease, the substrate forgot it.
    await stack.stopMock(0);
    rmSync(`${stack.mockEnvs[0]!.MOCK_BACKEND_DB_PATH}.substrate`, { force: true });
    await stack.restartMock(0);

    // A sweep finds it failed and provisions it again under a new operation id.
    await reprovisioned(lease!, first?.lifecycleId);
    const entries = (await inventory()).filter((p) => p.leaseUuid === lease);
    assert.equal(entries.length, 1, "one workload, on its owner");
    assert.equal(withStore((s) => s.placements.placement(lease!))?.owner, "mock-1", "never moved");
    assert.equal(
      withStore((s) => s.placements.attemptFor(lease!)),
      undefined,
      "the attempt settled",
    );
    assert.equal(await stack.leaseState(lease!), ACTIVE, "the tenant's lease stays ACTIVE");
    assert.ok((await metric("fred_reconciler_actions_total", 'action="reprovision"')) >= 1);
  });

  it("re-provisions a workload the backend lost behind its back (POST /_mock/lose), on its owner", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    await stack.waitState([lease!], ACTIVE);
    const first = withStore((s) => s.placements.placement(lease!));
    const lost = await signedClient(stack.mocks[0]!.ready.url, SECRETS[0]!).post(
      `/_mock/lose/${lease}`,
      undefined,
    );
    assert.ok(lost.status >= 200 && lost.status < 300, `lose answered ${lost.status}`);
    await reprovisioned(lease!, first?.lifecycleId);
    assert.equal((await inventory()).filter((p) => p.leaseUuid === lease).length, 1);
    assert.equal(withStore((s) => s.placements.placement(lease!))?.owner, "mock-1", "never moved");
    assert.equal(await stack.leaseState(lease!), ACTIVE);
  });

  it("deprovisions the workload of a lease closed on chain while providerd was down", async () => {
    const [lease, kept] = await stack.createLeases(2, "docker-small");
    await stack.waitState([lease!, kept!], ACTIVE);
    assert.equal(await stack.stopProviderd(), 0, "SIGTERM shuts providerd down cleanly");
    const [closed] = await stack.tenant.closeLeases([lease!], "done");
    assert.equal(closed!.status, "closed");
    assert.ok(
      (await inventory()).some((p) => p.leaseUuid === lease),
      "still running while nobody looks",
    );

    await stack.startProviderd();
    await until(
      async () => !(await inventory()).some((p) => p.leaseUuid === lease),
      "the closed lease's workload torn down",
      { timeoutMs: 60_000, intervalMs: 200, context: () => stack.providerd?.logTail() ?? "" },
    );
    assert.ok(
      (await metric("fred_reconciler_actions_total", 'action="orphan_deprovision_candidate"')) >= 1,
      "the reconciler's orphan pass did it",
    );
    const live = (await inventory()).find((p) => p.leaseUuid === kept);
    assert.equal(live?.status, "ready", "the lease still ACTIVE keeps its workload");
    assert.equal(await stack.leaseState(kept!), ACTIVE);
  });
});
