import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { ChainLease } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Provisioner } from "../../../src/provider/lifecycle/provisioner.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain } from "./deps.ts";

/**
 * New provisions are bounded between their attempt commit and the backend's answer: a
 * block of thousands of new leases must not put thousands of requests into the backend
 * pools at once. Real SQLite store; the backend is an in-memory client that holds every
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

describe("provision fan-out", () => {
  it("keeps at most `concurrency` provisions between attempt and answer; the rest follow in order", async () => {
    const clock = new ManualClock();
    const config = parseProviderConfig(yamlOf(baseConfig()));
    const store = PlacementStore.create(
      join(dir, "p.db"),
      PROVIDER_UUID,
      config.backends.map((b, i) => ({
        name: b.name,
        storageId: `${SID.slice(0, -1)}${i}`,
        baseline: { provisions: 0, retentions: 0 },
      })),
      clock.now(),
    );
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
    const deps = lifecycleDeps({
      config,
      chain: recordingChain([]),
      store,
      clock,
      clients: new Map(config.backends.map((b) => [b.name, client])),
    });
    const provisioner = new Provisioner(deps, 4);
    const leases = Array.from({ length: 20 }, (_, i) => pending(i));
    const never = new AbortController().signal;
    const steps = Promise.all(leases.map((l) => provisioner.provision(l.uuid, never, l)));
    let most = 0;
    let answered = 0;
    for (let turns = 0; answered < leases.length; turns++) {
      assert.ok(turns < 10_000, `stuck with ${answered} answered`);
      await tick();
      most = Math.max(most, held.length);
      // Every request on the wire has its attempt committed; the queued ones have none yet.
      const recorded = leases.filter((l) => store.attemptFor(l.uuid) !== undefined).length;
      assert.ok(recorded <= answered + 4, `${recorded} attempts with ${answered} answered`);
      const next = held.shift();
      if (next !== undefined) {
        next.answer();
        answered++;
      }
    }
    assert.deepEqual(await steps, Array(20).fill("sent"));
    assert.equal(most, 4);
    assert.deepEqual(
      order,
      leases.map((l) => l.uuid),
    );
    store.close();
  });
});
