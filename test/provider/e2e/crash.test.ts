import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { Failpoint } from "../../../src/failpoints.ts";
import { BackendClient, type ProvisionEntry } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { SECRETS, SIDS, Stack } from "./stack.ts";

/**
 * Crash safety and operator flags with real processes. The two crashes are real: providerd
 * runs with a crash point armed (FRED_FAILPOINTS) and SIGKILLs itself at exactly that line.
 * mock-2 takes two seconds per provision, so after its 202 the callback cannot have been
 * applied before the "after accepted" crash point fires.
 */
const stack = new Stack();
const ACTIVE = "LEASE_STATE_ACTIVE";

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

/** Every inventory entry of both mocks for `lease`. */
async function entriesFor(lease: string): Promise<ProvisionEntry[]> {
  const all = [...(await inventory(0)), ...(await inventory(1))];
  return all.filter((p) => p.leaseUuid === lease);
}

/** Opens the placement store (providerd may be running: WAL readers do not block it). */
function withStore<T>(fn: (s: PlacementStore) => T): T {
  const s = PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

async function onBackend(i: number, leases: readonly string[]): Promise<number> {
  const inv = await inventory(i);
  return leases.filter((l) => inv.some((p) => p.leaseUuid === l)).length;
}

/** Stops a running providerd cleanly, rewrites the config with `overrides`, starts it with `env`. */
async function restartWith(overrides: typeof stack.backendOverrides, env: Record<string, string> = {}) {
  if (stack.providerd !== undefined) {
    assert.equal(await stack.stopProviderd(), 0, "SIGTERM shuts providerd down cleanly");
  }
  stack.backendOverrides = overrides;
  stack.writeConfig();
  await stack.startProviderd(env);
}

/** Waits for the armed crash point to kill providerd; fails if it exited any other way. */
async function crashed(point: Failpoint): Promise<void> {
  const stderr = stack.providerd!.stderr;
  const { code, signal } = await stack.waitProviderdExit();
  assert.equal(signal, "SIGKILL", `${point} killed providerd (exit code ${code})\n${stderr().slice(-4000)}`);
}

describe("providerd crash safety and backend flags (devnet + providerd + mock backends)", () => {
  it("kill -9 after the attempt commit, before the backend call: redelivered once with its operation id; leases created while down are provisioned", async () => {
    const small = stack.sku("docker-small");
    const point = "provision.after-attempt-commit";
    await restartWith([{ skus: [small] }, { skus: [small] }], { FRED_FAILPOINTS: point });
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await crashed(point);

    const attempt = withStore((s) => s.placements.attemptFor(lease));
    assert.ok(attempt !== undefined, "the attempt was durable before the crash");
    assert.deepEqual(await entriesFor(lease), [], "no backend was called");
    // Created while providerd is down: found by the startup recovery pass.
    const [missed] = (await stack.createLeases(1, "docker-small")) as [string];

    await stack.startProviderd();
    await stack.waitState([lease, missed], ACTIVE);
    const redelivered = await entriesFor(lease);
    assert.equal(redelivered.length, 1, "the crashed lease is provisioned exactly once");
    assert.deepEqual(redelivered[0]!.lifecycleGeneration, { kind: "typed", id: attempt.operationId });
    assert.equal((await entriesFor(missed)).length, 1, "the missed lease is provisioned exactly once");
    withStore((s) => {
      assert.equal(s.placements.placement(lease)?.owner, attempt.backend);
      assert.equal(s.placements.placement(lease)?.lifecycleId, attempt.operationId);
      assert.ok(s.placements.placement(missed)?.owner !== undefined, "the missed lease has an owner");
      assert.deepEqual(s.placements.unresolvedAttempts(), []);
    });
  });

  it("kill -9 after the backend accepted, before its callback: ACTIVE once after restart", async () => {
    const small = stack.sku("docker-small");
    const point = "provision.after-accepted";
    // mock-1 drains, so the lease goes to the slow mock-2.
    await restartWith([{ skus: [small], draining: true }, { skus: [small] }], { FRED_FAILPOINTS: point });
    const [lease] = (await stack.createLeases(1, "docker-small")) as [string];
    await crashed(point);

    const attempt = withStore((s) => s.placements.attemptFor(lease));
    assert.equal(attempt?.backend, "mock-2", "the attempt survived the crash");
    const accepted = await entriesFor(lease);
    assert.equal(accepted.length, 1, "mock-2 accepted the provision before the crash");
    assert.equal(await onBackend(1, [lease]), 1);

    await stack.startProviderd();
    await stack.waitState([lease], ACTIVE);
    const entries = await entriesFor(lease);
    assert.equal(entries.length, 1, "provisioned exactly once");
    assert.equal(await onBackend(1, [lease]), 1);
    assert.deepEqual(entries[0]!.lifecycleGeneration, { kind: "typed", id: attempt.operationId });
    withStore((s) => {
      assert.equal(s.placements.placement(lease)?.owner, "mock-2");
      assert.equal(s.placements.placement(lease)?.lifecycleId, attempt.operationId);
      assert.equal(s.placements.attemptFor(lease), undefined);
      assert.deepEqual(s.placements.unresolvedAttempts(), []);
    });
  });

  it("draining and fenced backends receive no new leases", async () => {
    const small = stack.sku("docker-small");
    await restartWith([{ skus: [small], draining: true }, { skus: [small] }]);
    const toTwo = await stack.createLeases(3, "docker-small");
    await stack.waitState(toTwo, ACTIVE);
    assert.equal(await onBackend(0, toTwo), 0, "draining mock-1 got nothing new");
    assert.equal(await onBackend(1, toTwo), 3);

    await restartWith([{ skus: [small] }, { skus: [small], fenced: true }]);
    const health = (await (await fetch(`${stack.api}/health`)).json()) as {
      checks: Record<string, { status: string; message?: string }>;
    };
    assert.deepEqual(health.checks["backend:mock-2"], { status: "unhealthy", message: "backend is fenced" });
    const toOne = await stack.createLeases(3, "docker-small");
    await stack.waitState(toOne, ACTIVE);
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
    // Last test: after() stops this providerd and every mock.
    await stack.restartMock(0);
  });
});
