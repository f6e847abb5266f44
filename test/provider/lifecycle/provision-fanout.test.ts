import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pino from "pino";
import type { ChainLease } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Lifecycle } from "../../../src/provider/lifecycle/index.ts";
import { PROVISION_ADMISSION } from "../../../src/provider/lifecycle/lifecycle.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain } from "./deps.ts";

/**
 * New provisions are bounded between their attempt commit and the backend's answer (by
 * the lifecycle's admission): a block of thousands of new leases must not put thousands
 * of requests into the backend pools at once. Real SQLite store; the backend is an in-memory client that holds every
 * provision until the test answers it.
 */
const dir = mkdtempSync(join(tmpdir(), "fred-provision-fanout-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";
const pending = (i: number): ChainLease =>
  ({
    uuid: `0190f3a2-7c1e-7000-8000-${String(0xf00 + i).padStart(12, "0")}`,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state: "LEASE_STATE_PENDING",
    items: [{ skuUuid: SKU, quantity: 1n, serviceName: "", customDomain: "" }],
    metaHash: "",
  }) as ChainLease;

const tick = () => new Promise((r) => setImmediate(r));

/** A placement store over the config's backends, in its own file. */
function storeFor(config: ReturnType<typeof parseProviderConfig>, clock: ManualClock, name: string) {
  return PlacementStore.create(
    join(dir, name),
    PROVIDER_UUID,
    config.backends.map((b, i) => ({
      name: b.name,
      storageId: `${SID.slice(0, -1)}${i}`,
      baseline: { provisions: 0, retentions: 0 },
    })),
    clock.now(),
  );
}

/** A backend client that holds every provision until the test answers it. */
function holdingClient() {
  const held: { lease: string; answer: () => void }[] = [];
  const order: string[] = [];
  const client = {
    provision: (req: { leaseUuid: string }) =>
      new Promise((resolve) => {
        order.push(req.leaseUuid);
        held.push({
          lease: req.leaseUuid,
          answer: () => resolve({ kind: "accepted", status: 202, body: undefined }),
        });
      }),
  } as unknown as BackendClient;
  return { client, held, order };
}

describe("provision fan-out", () => {
  it("a burst of lease_created events waits as queued leases: a bounded number of workflows, one listing, and a lease closed while queued is never provisioned", async () => {
    const clock = new ManualClock();
    const config = parseProviderConfig(yamlOf(baseConfig()));
    const store = storeFor(config, clock, "burst.db");
    const { client, held, order } = holdingClient();
    const leases = Array.from({ length: 2 * PROVISION_ADMISSION }, (_, i) => pending(i));
    const byUuid = new Map(leases.map((l) => [l.uuid, l]));
    let listings = 0;
    let singles = 0;
    const chain = recordingChain([], {
      getLease: async (uuid: string) => {
        singles++;
        return byUuid.get(uuid);
      },
      leasesByProvider: async (_p, _state, _signal, onPage) => {
        listings++;
        onPage?.(leases);
        return leases;
      },
    });
    const deps = lifecycleDeps({
      config,
      chain,
      store,
      clock,
      clients: new Map(config.backends.map((b) => [b.name, client])),
    });
    const lifecycle = new Lifecycle(deps);
    const created = (l: ChainLease, kind: "lease_created" | "lease_closed") => ({
      kind,
      leaseUuid: l.uuid,
      providerUuid: PROVIDER_UUID,
      tenant: l.tenant,
      height: 7,
      txHash: undefined,
      reason: undefined,
    });
    for (const l of leases) lifecycle.onEvent(created(l, "lease_created"));
    const last = leases.at(-1)!;
    lifecycle.onEvent(created(last, "lease_closed"));
    let most = 0;
    let wire = 0;
    for (let turns = 0; order.length < leases.length - 1 || held.length > 0; turns++) {
      assert.ok(turns < 20_000, `stuck with ${order.length} sent`);
      await tick();
      // Workflows in the lease queue: never the whole burst at once.
      most = Math.max(most, deps.queue.depth);
      wire = Math.max(wire, held.length);
      // Write-ahead: every request on the wire has its attempt committed.
      for (const h of held) assert.notEqual(store.placements.attemptFor(h.lease), undefined, h.lease);
      held.shift()?.answer();
    }
    await lifecycle.idle();
    assert.ok(most > 0 && most <= PROVISION_ADMISSION + 1, `${most} workflows at once`);
    assert.ok(wire > 0 && wire <= PROVISION_ADMISSION, `${wire} provisions on the wire at once`);
    assert.equal(listings, 1, "the burst is read in one listing");
    assert.equal(singles, 0);
    assert.deepEqual(
      order,
      leases.slice(0, -1).map((l) => l.uuid),
    );
    assert.equal(store.placements.attemptFor(last.uuid), undefined, "closed while queued: never provisioned");
    await lifecycle.stop(1_000);
    store.close();
  });

  it("stop waits for a provision still on the wire up to its deadline on the clock, then logs ERR_SHUTDOWN_DRAIN_TIMEOUT and aborts", async () => {
    const clock = new ManualClock();
    const config = parseProviderConfig(yamlOf(baseConfig()));
    const store = storeFor(config, clock, "drain.db");
    const { client, held } = holdingClient();
    const lease = pending(0);
    const chain = recordingChain([], { getLease: async () => lease });
    const logged: { msg: string; err?: { code?: string } }[] = [];
    const deps = {
      ...lifecycleDeps({
        config,
        chain,
        store,
        clock,
        clients: new Map(config.backends.map((b) => [b.name, client])),
      }),
      logger: pino({ level: "warn" }, { write: (line: string) => logged.push(JSON.parse(line)) }),
    };
    const lifecycle = new Lifecycle(deps);
    lifecycle.onEvent({
      kind: "lease_created",
      leaseUuid: lease.uuid,
      providerUuid: PROVIDER_UUID,
      tenant: lease.tenant,
      height: 7,
      txHash: undefined,
      reason: undefined,
    });
    for (let turns = 0; held.length === 0; turns++) {
      assert.ok(turns < 10_000, "the provision never reached the backend");
      await tick();
    }
    let stopped = false;
    const stopping = lifecycle.stop(5_000).then(() => {
      stopped = true;
    });
    await tick();
    clock.advance(4_999);
    await tick();
    assert.equal(stopped, false, "still draining 1 ms before the deadline");
    clock.advance(1);
    await stopping;
    const drain = logged.find((l) => l.msg === "lease work did not drain in time; aborting the rest");
    assert.equal(drain?.err?.code, "ERR_SHUTDOWN_DRAIN_TIMEOUT");
    held.shift()?.answer();
    store.close();
  });
});
