import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { ChainLease } from "../../../src/chain/port.ts";
import { KeyedMutex, RateBuckets } from "../../../src/core/async/index.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { FredError } from "../../../src/core/errors.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Lifecycle } from "../../../src/provider/lifecycle/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain, type SentTx } from "./deps.ts";

const tick = () => new Promise((r) => setImmediate(r));
const dir = mkdtempSync(join(tmpdir(), "fred-lease-queue-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("the lease queue (KeyedMutex)", () => {
  it("runs one lease's tasks in order, one at a time, and other leases alongside", async () => {
    const q = new KeyedMutex();
    const log: string[] = [];
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => {
      releaseA = r;
    });
    const a1 = q.run("a", async () => {
      log.push("a1 start");
      await gateA;
      log.push("a1 end");
    });
    const a2 = q.run("a", async () => {
      log.push("a2");
    });
    const b1 = q.run("b", async () => {
      log.push("b1");
    });
    await b1;
    assert.deepEqual(log, ["a1 start", "b1"], "b ran while a1 was still running; a2 waited");
    assert.equal(q.depth, 2);
    releaseA();
    await Promise.all([a1, a2]);
    assert.deepEqual(log, ["a1 start", "b1", "a1 end", "a2"]);
    assert.equal(q.depth, 0);
    assert.equal(q.activeKeys, 0);
  });

  it("a failing task rejects its caller and does not block the next task", async () => {
    const q = new KeyedMutex();
    await assert.rejects(
      q.run("a", async () => {
        throw new Error("boom");
      }),
      /boom/,
    );
    assert.equal(await q.run("a", async () => 42), 42);
  });
});

/** A billing-only SKU: its leases are acknowledged without a backend. */
const BILLING_SKU = "0190f3a2-7c1e-7000-8000-00000000000c";
const billingLease = (uuid: string): ChainLease =>
  ({
    uuid,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state: "LEASE_STATE_PENDING",
    items: [{ skuUuid: BILLING_SKU, quantity: 1n, serviceName: "", customDomain: "" }],
    metaHash: "",
  }) as ChainLease;

let n = 0;
/** A lifecycle whose chain answers getLease with `read` (and records every call's time). */
function lifecycleWith(read: (uuid: string, call: number) => ChainLease | undefined) {
  const clock = new ManualClock();
  const config = parseProviderConfig(yamlOf({ ...baseConfig(), billing_only_skus: [BILLING_SKU] }));
  const store = PlacementStore.create(join(dir, `p-${++n}.db`), PROVIDER_UUID, [], clock.now());
  const sent: SentTx[] = [];
  const calls = new Map<string, number[]>();
  const chain = recordingChain(sent, {
    getLease: async (uuid: string) => {
      const mine = calls.get(uuid) ?? [];
      mine.push(clock.now());
      calls.set(uuid, mine);
      return read(uuid, mine.length);
    },
  });
  const lifecycle = new Lifecycle(lifecycleDeps({ config, chain, store, clock }));
  return { clock, store, sent, calls, lifecycle };
}

/** Lets the lease step run until it waits on the clock (its retry delay) or finishes. */
async function untilWaitingOrIdle(clock: ManualClock, lifecycle: Lifecycle): Promise<void> {
  while (clock.pendingTimers === 0 && lifecycle.busy > 0) await tick();
}

describe("lease steps retry on their own (the Clock's backoff)", () => {
  it("retries a retryable failure with doubling delays on the injected clock", async () => {
    const L = "0190f3a2-7c1e-7000-8000-000000000e01";
    // Not visible on the node yet twice (retryable), then PENDING and billing-only.
    const { clock, store, sent, calls, lifecycle } = lifecycleWith((uuid, call) =>
      call < 3 ? undefined : billingLease(uuid),
    );
    lifecycle.startProvision(L);
    await untilWaitingOrIdle(clock, lifecycle);
    clock.advance(500);
    await untilWaitingOrIdle(clock, lifecycle);
    clock.advance(1_000);
    await lifecycle.idle();
    const times = calls.get(L) ?? [];
    const t0 = times[0]!;
    assert.deepEqual(
      times.map((t) => t - t0),
      [0, 500, 1_500],
    );
    assert.deepEqual(sent, [{ kind: "acknowledge", uuids: [L] }]);
    store.close();
  });

  it("gives up at once on a non-retryable failure, without affecting other leases", async () => {
    const broken = "0190f3a2-7c1e-7000-8000-000000000e02";
    const fine = "0190f3a2-7c1e-7000-8000-000000000e03";
    const { store, sent, calls, lifecycle } = lifecycleWith((uuid) => {
      if (uuid === broken) throw new FredError("ERR_CONFIG", "never works");
      return billingLease(uuid);
    });
    lifecycle.startProvision(broken);
    lifecycle.startProvision(fine);
    await lifecycle.idle();
    assert.equal(calls.get(broken)?.length, 1, "no retry of a non-retryable failure");
    assert.deepEqual(sent, [{ kind: "acknowledge", uuids: [fine] }]);
    store.close();
  });
});

describe("RateBuckets", () => {
  it("allows the burst, then refuses with a Retry-After until tokens refill", () => {
    const clock = new ManualClock();
    const b = new RateBuckets(2, 3, clock);
    assert.deepEqual([b.take("ip"), b.take("ip"), b.take("ip")], [0, 0, 0]);
    assert.equal(b.take("ip"), 1);
    assert.equal(b.take("other"), 0, "keys have separate buckets");
    clock.advance(500);
    assert.equal(b.take("ip"), 0);
    assert.equal(b.take("ip"), 1);
  });
});
