import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ChainLease } from "../../../src/chain/port.ts";
import { buildCallbackUrl } from "../../../src/core/backend-contract/index.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { type BackendClient, createBackendClients } from "../../../src/provider/backend-client/index.ts";
import { type ProviderConfig, parseProviderConfig } from "../../../src/provider/config/index.ts";
import type { LifecycleDeps } from "../../../src/provider/lifecycle/index.ts";
import { Provisioner } from "../../../src/provider/lifecycle/provisioner.ts";
import { checkOverdueAttempts } from "../../../src/provider/lifecycle/timeouts.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type MockProcess, spawnMock } from "../../backend/mock/process.ts";
import { until } from "../../support/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain, type SentTx } from "./deps.ts";

/**
 * The callback-timeout check against a real mock backend process: the backend's answer
 * decides (ready → acknowledge, failed → reject, unknown → redeliver the same operation),
 * and silence or a young attempt changes nothing. The chain is recorded, not real.
 */
const SECRET = "timeout-test-secret-0123456789abcdef";
const SID = "7e2a4b3c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
const FAILING = "0190f3a2-7c1e-7000-8000-0000000000f1";
const dir = mkdtempSync(join(tmpdir(), "fred-timeouts-"));
const flush = () => new Promise((r) => setImmediate(r));

let mock: MockProcess;
let config: ProviderConfig;
let clients: Map<string, BackendClient>;
const sent: SentTx[] = [];
const pendingLease = (uuid: string): ChainLease =>
  ({
    uuid,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state: "LEASE_STATE_PENDING",
    items: [
      { skuUuid: "0190f3a2-7c1e-7000-8000-00000000000a", quantity: 1n, serviceName: "", customDomain: "" },
    ],
    metaHash: "",
  }) as ChainLease;

before(async () => {
  mock = await spawnMock({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SID,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_NAME: "one",
    MOCK_BACKEND_FAIL_LEASES: FAILING,
  });
  const c = baseConfig();
  c.backends = [{ name: "one", url: mock.ready.url, hmac_secret: SECRET, default: true }];
  c.provision_callback_timeout = "1m";
  config = parseProviderConfig(yamlOf(c));
  clients = await createBackendClients(config, new Map([["one", SID]]), systemClock);
});

after(async () => {
  for (const c of clients?.values() ?? []) await c.close();
  await mock?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function setup() {
  const clock = new ManualClock(Date.now());
  const store = PlacementStore.create(
    join(dir, `p-${newUuidV4()}.db`),
    PROVIDER_UUID,
    [{ name: "one", storageId: SID, baseline: { provisions: 0, retentions: 0 } }],
    clock.now(),
  );
  const chain = recordingChain(sent, {
    getLease: async (uuid: string) => pendingLease(uuid),
    leasesByProvider: async () => [],
  });
  const deps: LifecycleDeps = lifecycleDeps({ config, chain, store, clock, clients });
  return { deps, store, clock, provisioner: new Provisioner(deps) };
}

/** Provisions `lease` on the mock under `operationId`, as an earlier providerd would have. */
async function provisionOnBackend(lease: string, operationId: string): Promise<void> {
  const out = await clients.get("one")!.provision({
    leaseUuid: lease,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    items: [{ sku: "0190f3a2-7c1e-7000-8000-00000000000a", quantity: 1 }],
    callbackUrl: buildCallbackUrl(config.callbackBase, "operation_id", operationId),
    lifecycleCallbackUrl: buildCallbackUrl(config.callbackBase, "lifecycle_id", operationId),
  });
  assert.equal(out.kind, "accepted");
}

async function statusOnBackend(lease: string): Promise<string | undefined> {
  return (await clients.get("one")!.provisionsFor([lease]))[0]?.status;
}

async function untilStatus(lease: string, status: string): Promise<void> {
  await until(
    async () => (await statusOnBackend(lease)) === status,
    `${lease} to become ${status} on the backend`,
    {
      timeoutMs: 20_000,
      intervalMs: 50,
    },
  );
}

describe("callback timeout: ask the backend, act only on evidence", () => {
  it("confirms a ready lease, rejects a failed one, redelivers an unknown one, leaves young attempts", async () => {
    const { deps, store, clock, provisioner } = setup();
    const ready = "0190f3a2-7c1e-7000-8000-0000000000a1";
    const unknown = "0190f3a2-7c1e-7000-8000-0000000000a2";
    const young = "0190f3a2-7c1e-7000-8000-0000000000a3";
    const ops = { ready: newUuidV4(), failed: newUuidV4(), unknown: newUuidV4(), young: newUuidV4() };
    const attempt = (leaseUuid: string, operationId: string, createdAt: number) =>
      store.placements.recordAttempt({
        leaseUuid,
        backend: "one",
        operationId,
        kind: "provision",
        createdAt,
      });
    attempt(ready, ops.ready, clock.now());
    attempt(FAILING, ops.failed, clock.now());
    attempt(unknown, ops.unknown, clock.now());
    await provisionOnBackend(ready, ops.ready);
    await provisionOnBackend(FAILING, ops.failed);
    await untilStatus(ready, "ready");
    await untilStatus(FAILING, "failed");
    clock.advance(60_000);
    attempt(young, ops.young, clock.now());

    const verdicts = await checkOverdueAttempts(deps, provisioner, new AbortController().signal);
    await flush();
    assert.deepEqual(Object.fromEntries(verdicts), {
      [ready]: "confirmed",
      [FAILING]: "rejected",
      [unknown]: "redelivered",
    });
    assert.equal(store.placements.placement(ready)?.owner, "one");
    assert.equal(store.placements.attemptFor(FAILING), undefined);
    assert.equal(
      store.placements.attemptFor(unknown)?.operationId,
      ops.unknown,
      "redelivery keeps the attempt",
    );
    assert.equal(store.placements.attemptFor(young)?.operationId, ops.young);
    const generation = (await clients.get("one")!.provisionsFor([unknown]))[0]?.lifecycleGeneration;
    assert.deepEqual(
      generation,
      { kind: "typed", id: ops.unknown },
      "redelivered with the same operation id",
    );
    const onChain = sent.filter((s) => [ready, FAILING].includes(s.uuids[0]!));
    assert.deepEqual(
      onChain.sort((a, b) => a.kind.localeCompare(b.kind)),
      [
        { kind: "acknowledge", uuids: [ready] },
        { kind: "reject", uuids: [FAILING], reason: "provisioning failed" },
      ],
    );
    store.close();
  });

  it("keeps every attempt when the backend cannot be asked", async () => {
    const { deps, store, clock, provisioner } = setup();
    const lease = "0190f3a2-7c1e-7000-8000-0000000000b1";
    const op = newUuidV4();
    store.placements.recordAttempt({
      leaseUuid: lease,
      backend: "one",
      operationId: op,
      kind: "provision",
      createdAt: clock.now(),
    });
    clock.advance(120_000);
    const down = { ...deps, clients: new Map() };
    const verdicts = await checkOverdueAttempts(down, provisioner, new AbortController().signal);
    assert.deepEqual(Object.fromEntries(verdicts), { [lease]: "unanswered" });
    assert.equal(store.placements.attemptFor(lease)?.operationId, op);
    store.close();
  });
});
