import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ChainLease } from "../../../src/chain/port.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import {
  type BackendClient,
  closeBackendClients,
  createBackendClients,
} from "../../../src/provider/backend-client/index.ts";
import { type ProviderConfig, parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Provisioner } from "../../../src/provider/lifecycle/provisioner.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type MockProcess, spawnMock } from "../../backend/mock/process.ts";
import { baseConfig, PROVIDER_UUID, SECRET_1, SECRET_2, SKU_A, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain, type SentTx } from "./deps.ts";

/**
 * The chaos run's "placement conflict" (seed 975257947: one lease on mock-1 and mock-2),
 * replayed deterministically with two real mock backend processes, the real placement
 * store and real backend clients (the chain is recorded, not real).
 *
 * A provision accepted by backend one (its 202 promises a durable intent), then one is
 * killed. A redelivery of that same attempt (the sweep's or the callback-timeout check's:
 * the sweep plans it when its inventory was read before the first send landed) finds the
 * connection refused, or one's circuit open. That try reached nothing, but the first send
 * did: the attempt must stay, or the lease looks recordless and is provisioned again on
 * backend two while one's journal brings it back on restart. (Chaos seed 1384414795 on
 * main showed both: "provision accepted" or "outcome unknown" on mock-1, then the sweep's
 * redeliver failing with ERR_PROVISION_NOT_SENT, then the lease provisioned on mock-2.)
 */
const SID_ONE = "7e2a4b3c-5d6e-4f70-8a9b-0c1d2e3f4a51";
const SID_TWO = "7e2a4b3c-5d6e-4f70-8a9b-0c1d2e3f4a52";
const dir = mkdtempSync(join(tmpdir(), "fred-redeliver-"));
const sent: SentTx[] = [];
const mocks: Record<"one" | "two", MockProcess | undefined> = { one: undefined, two: undefined };
let config: ProviderConfig;

const mockOne = (addr: string) =>
  spawnMock({
    MOCK_BACKEND_ADDR: addr,
    MOCK_BACKEND_STORAGE_ID: SID_ONE,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET_1,
    MOCK_BACKEND_NAME: "one",
    MOCK_BACKEND_DB_PATH: join(dir, "one.db"),
  });

const pendingLease = (uuid: string): ChainLease =>
  ({
    uuid,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state: "LEASE_STATE_PENDING",
    items: [{ skuUuid: SKU_A, quantity: 1n, serviceName: "", customDomain: "" }],
    metaHash: "",
  }) as ChainLease;

before(async () => {
  mocks.one = await mockOne("127.0.0.1:0");
  mocks.two = await spawnMock({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SID_TWO,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET_2,
    MOCK_BACKEND_NAME: "two",
    MOCK_BACKEND_DB_PATH: join(dir, "two.db"),
  });
  const c = baseConfig();
  c.backends = [
    { name: "one", url: mocks.one.ready.url, hmac_secret: SECRET_1, skus: [SKU_A], default: true },
    { name: "two", url: mocks.two.ready.url, hmac_secret: SECRET_2, skus: [SKU_A] },
  ];
  config = parseProviderConfig(yamlOf(c));
});

after(async () => {
  await mocks.one?.stop();
  await mocks.two?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** One providerd process's view: fresh backend clients (pools, breakers) over the shared store. */
async function providerd(store: PlacementStore, clock: ManualClock) {
  const clients = await createBackendClients(
    config,
    new Map([
      ["one", SID_ONE],
      ["two", SID_TWO],
    ]),
    systemClock,
  );
  const chain = recordingChain(sent, {
    getLease: async (uuid: string) => pendingLease(uuid),
    leasesByProvider: async () => [],
  });
  const provisioner = new Provisioner(lifecycleDeps({ config, chain, store, clock, clients }));
  return { clients, provisioner };
}

async function holders(clients: Map<string, BackendClient>, lease: string): Promise<string[]> {
  const out: string[] = [];
  for (const [name, client] of clients) {
    if ((await client.provisionsFor([lease])).length > 0) out.push(name);
  }
  return out;
}

/**
 * The four steps, on lease `lease`; `tripCircuit`: the redelivery meets backend one's open
 * circuit (five refused reads first) instead of a refused connection.
 */
async function scenario(lease: string, tripCircuit: boolean): Promise<void> {
  const clock = new ManualClock(Date.now());
  const store = PlacementStore.create(
    join(dir, `placements-${lease}.db`),
    PROVIDER_UUID,
    [
      { name: "one", storageId: SID_ONE, baseline: { provisions: 0, retentions: 0 } },
      { name: "two", storageId: SID_TWO, baseline: { provisions: 0, retentions: 0 } },
    ],
    clock.now(),
  );
  const signal = new AbortController().signal;

  // 1. The first send: backend one accepts (its 202 means the intent is in its journal).
  const first = await providerd(store, clock);
  const step = await first.provisioner.provision(lease, signal, {
    lease: pendingLease(lease),
    target: { backend: "one" },
  });
  assert.equal(step, "sent");
  const attempt = store.placements.attemptFor(lease);
  assert.equal(attempt?.backend, "one");
  await closeBackendClients(first.clients);

  // 2. Backend one is killed; the redelivery of the same attempt reaches nothing.
  const port = new URL(mocks.one!.ready.url).port;
  await mocks.one!.kill();
  mocks.one = undefined;
  const second = await providerd(store, clock);
  if (tripCircuit) {
    for (let i = 0; i < 5; i++)
      await second.clients
        .get("one")!
        .provisionsFor([lease])
        .catch(() => {});
    assert.equal(second.clients.get("one")!.circuitState, "open");
  }
  await second.provisioner.redeliver(attempt!, signal).catch((err: unknown) => {
    if (!(err instanceof FredError && err.code === "ERR_PROVISION_NOT_SENT")) throw err;
  });
  assert.equal(
    store.placements.attemptFor(lease)?.operationId,
    attempt!.operationId,
    "a redelivery that reached nothing keeps the attempt (its first send was accepted)",
  );

  // 3. Backend one silent, the lease PENDING: new work is routed (what the event path's retry
  // and the sweep's recordless-PENDING provision do). The attempt must hold it back.
  for (let i = 0; i < 4; i++) {
    const again = await second.provisioner
      .provision(lease, signal, { lease: pendingLease(lease) })
      .catch((err: unknown) => {
        if (err instanceof FredError && err.code === "ERR_PROVISION_NOT_SENT") return "not-sent";
        throw err;
      });
    if (again !== "not-sent") break;
  }

  // 4. Backend one restarts from its journal: the lease must be on one backend only.
  mocks.one = await mockOne(`127.0.0.1:${port}`);
  const fresh = await providerd(store, clock);
  assert.deepEqual(await holders(fresh.clients, lease), ["one"], "nothing runs twice");
  await closeBackendClients(second.clients);
  await closeBackendClients(fresh.clients);
  store.close();
}

describe("redelivery that reaches nothing (chaos: one lease on two backends)", () => {
  it("connection refused: keeps the attempt, so the lease never reaches a second backend", async () => {
    await scenario("0190f3a2-7c1e-7000-8000-0000000000c1", false);
  });

  it("circuit open: keeps the attempt, so the lease never reaches a second backend", async () => {
    await scenario("0190f3a2-7c1e-7000-8000-0000000000c2", true);
  });
});
