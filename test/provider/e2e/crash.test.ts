import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { BackendClient, type ProvisionEntry } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { SECRETS, SIDS, Stack, until } from "./stack.ts";

/**
 * Crash safety and operator flags with real processes. mock-2 takes two seconds per
 * provision, which leaves a window between "backend accepted" and "callback sent".
 */
const stack = new Stack();

before(async () => {
  await stack.start(
    (): Record<string, string>[] => [{}, { MOCK_BACKEND_DELAY: "2s" }],
    (s) => {
      const small = s.sku("docker-small");
      s.backendOverrides = [{ skus: [small] }, { skus: [small] }];
    },
  );
});

after(async () => {
  await stack.close();
});

async function inventory(i: number): Promise<ProvisionEntry[]> {
  const config = parseProviderConfig(readFileSync(stack.configPath, "utf8"));
  const client = await BackendClient.create({
    // The test reads inventories even of a backend providerd is told to fence.
    backend: { ...config.backends[i]!, fenced: false },
    secret: SECRETS[i]!,
    storageId: SIDS[i],
  });
  try {
    return (await client.inventory()).provisions;
  } finally {
    await client.close();
  }
}

function store(): PlacementStore {
  return PlacementStore.open(stack.placementPath, stack.keys.provider_uuid);
}

async function onBackend(i: number, leases: readonly string[]): Promise<number> {
  const inv = await inventory(i);
  return leases.filter((l) => inv.some((p) => p.leaseUuid === l)).length;
}

async function restartWith(overrides: typeof stack.backendOverrides): Promise<void> {
  assert.equal(await stack.stopProviderd(), 0, "SIGTERM shuts providerd down cleanly");
  stack.backendOverrides = overrides;
  stack.writeConfig();
  await stack.startProviderd();
}

describe("providerd crash safety and backend flags (devnet + providerd + mock backends)", () => {
  it("provisions leases created while it was down, redelivering a committed attempt with its operation id", async () => {
    const [missed, attempted] = (await stack.createLeases(2, "docker-small")) as [string, string];
    // What a providerd killed between the attempt commit and the backend call leaves behind.
    const operationId = newUuidV4();
    const s = store();
    try {
      s.recordAttempt({
        leaseUuid: attempted,
        backend: "mock-1",
        operationId,
        kind: "provision",
        createdAt: Date.now(),
      });
    } finally {
      s.close();
    }
    await stack.startProviderd();
    await stack.waitState([missed, attempted], "LEASE_STATE_ACTIVE");
    const inv = [...(await inventory(0)), ...(await inventory(1))];
    for (const lease of [missed, attempted]) {
      assert.equal(inv.filter((p) => p.leaseUuid === lease).length, 1, `${lease} provisioned exactly once`);
    }
    const redelivered = inv.find((p) => p.leaseUuid === attempted)!;
    assert.deepEqual(redelivered.lifecycleGeneration, { kind: "typed", id: operationId });
    const after = store();
    try {
      assert.equal(after.placement(attempted)?.owner, "mock-1");
      assert.equal(after.unresolvedAttempts().length, 0);
    } finally {
      after.close();
    }
  });

  it("draining and fenced backends receive no new leases", async () => {
    const small = stack.sku("docker-small");
    await restartWith([{ skus: [small], draining: true }, { skus: [small] }]);
    const toTwo = await stack.createLeases(3, "docker-small");
    await stack.waitState(toTwo, "LEASE_STATE_ACTIVE");
    assert.equal(await onBackend(0, toTwo), 0, "draining mock-1 got nothing new");
    assert.equal(await onBackend(1, toTwo), 3);

    await restartWith([{ skus: [small] }, { skus: [small], fenced: true }]);
    const health = (await (await fetch(`${stack.api}/health`)).json()) as {
      checks: Record<string, { status: string; message?: string }>;
    };
    assert.deepEqual(health.checks["backend:mock-2"], { status: "unhealthy", message: "backend is fenced" });
    const toOne = await stack.createLeases(3, "docker-small");
    await stack.waitState(toOne, "LEASE_STATE_ACTIVE");
    assert.equal(await onBackend(1, toOne), 0, "fenced mock-2 got nothing new");
    assert.equal(await onBackend(0, toOne), 3);
  });

  it("/readyz is 503 (and /health 200, degraded) while a backend cannot answer recovery", async () => {
    await stack.stopProviderd();
    await stack.stopMock(0);
    await stack.launchProviderd();
    const health = await fetch(`${stack.api}/health`);
    assert.equal(health.status, 200);
    const body = (await health.json()) as { status: string; checks: Record<string, { status: string }> };
    assert.equal(body.status, "degraded");
    assert.equal(body.checks["backend:mock-1"]?.status, "unhealthy");
    assert.equal((await fetch(`${stack.api}/readyz`)).status, 503);
    // Back for the next test, which restarts providerd and waits for /readyz 200. (This
    // process's circuit breaker may have opened on the failed reads: it would only let a
    // trial request through after 60 s.)
    await stack.restartMock(0);
  });

  it("kill -9 after the backend accepted, before its callback: ACTIVE once after restart", async () => {
    const small = stack.sku("docker-small");
    await restartWith([{ skus: [small], draining: true }, { skus: [small] }]);
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await until(
      async () => (await inventory(1)).some((p) => p.leaseUuid === lease && p.status === "provisioning"),
      "mock-2 accepted the provision",
    );
    await stack.killProviderd();
    const s = store();
    try {
      assert.equal(s.attemptFor(lease)?.backend, "mock-2", "the attempt survived the crash");
    } finally {
      s.close();
    }
    await stack.startProviderd();
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    assert.equal(await onBackend(1, [lease]), 1);
    assert.equal(await onBackend(0, [lease]), 0);
    const after = store();
    try {
      assert.equal(after.placement(lease)?.owner, "mock-2");
      assert.equal(after.attemptFor(lease), undefined);
    } finally {
      after.close();
    }
  });
});
