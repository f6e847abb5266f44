import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ChainLease, ChainPort } from "../../../src/chain/port.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { ProvisionLeaseReads } from "../../../src/provider/lifecycle/provisioner.ts";

/**
 * A chain that answers from a lease list (which a test may extend) and counts the
 * queries it served; `gate` holds listings until the test opens it.
 */
function chainWith(leases: ChainLease[]) {
  const calls = { single: 0, listings: 0 };
  let open: () => void = () => {};
  let gate: Promise<void> | undefined;
  const chain = {
    getLease: async (uuid: string) => {
      calls.single++;
      return leases.find((l) => l.uuid === uuid);
    },
    leasesByProvider: async (_p: string, state: string) => {
      calls.listings++;
      const snapshot = leases.filter((l) => l.state === state);
      await gate;
      return snapshot;
    },
  } as unknown as ChainPort;
  return {
    chain,
    calls,
    hold: () => {
      gate = new Promise((r) => {
        open = r;
      });
    },
    release: () => {
      gate = undefined;
      open();
    },
  };
}

const many = (from: number, n: number) => Array.from({ length: n }, (_, i) => lease(from + i));

const lease = (i: number, state: ChainLease["state"] = "LEASE_STATE_PENDING") =>
  ({ uuid: `0190f3a2-7c1e-7000-8000-${String(i).padStart(12, "0")}`, state }) as ChainLease;

describe("ProvisionLeaseReads", () => {
  it("reads a few leases one by one", async () => {
    const { chain, calls } = chainWith([lease(1), lease(2)]);
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    const got = await Promise.all([r.get(lease(1).uuid), r.get(lease(2).uuid), r.get(lease(3).uuid)]);
    assert.deepEqual(
      got.map((l) => l?.uuid),
      [lease(1).uuid, lease(2).uuid, undefined],
    );
    assert.deepEqual(calls, { single: 3, listings: 0 });
  });

  it("turns a burst into one PENDING listing plus single reads for what it lacks", async () => {
    const all = Array.from({ length: 50 }, (_, i) => lease(i));
    all.push(lease(99, "LEASE_STATE_ACTIVE"));
    const { chain, calls } = chainWith(all);
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    const got = await Promise.all(all.map((l) => r.get(l.uuid)));
    assert.deepEqual(
      got.map((l) => l?.state),
      all.map((l) => l.state),
    );
    assert.deepEqual(calls, { single: 1, listings: 1 });
    assert.equal(r.sweeps, 1);
  });

  it("answers later bursts of the same block from the listing instead of listing again", async () => {
    const all = many(0, 100);
    const { chain, calls } = chainWith(all);
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    await Promise.all(all.slice(0, 40).map((l) => r.get(l.uuid)));
    const later = await Promise.all(all.slice(40).map((l) => r.get(l.uuid)));
    assert.deepEqual(
      later.map((l) => l?.uuid),
      all.slice(40).map((l) => l.uuid),
    );
    assert.deepEqual(calls, { single: 0, listings: 1 });
  });

  it("hands each listed lease out once: a re-read goes to the chain", async () => {
    const all = many(0, 40);
    const { chain, calls } = chainWith(all);
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    await Promise.all(all.map((l) => r.get(l.uuid)));
    assert.equal((await r.get(all[0]!.uuid))?.uuid, all[0]!.uuid);
    assert.deepEqual(calls, { single: 1, listings: 1 });
  });

  it("forgets a listing after its time to live", async () => {
    const all = many(0, 80);
    const { chain, calls } = chainWith(all);
    const clock = new ManualClock();
    const r = new ProvisionLeaseReads(chain, "p", clock, { listingTtlMs: 2_000 });
    await Promise.all(all.slice(0, 40).map((l) => r.get(l.uuid)));
    clock.advance(2_001);
    await Promise.all(all.slice(40, 45).map((l) => r.get(l.uuid)));
    assert.deepEqual(calls, { single: 5, listings: 1 }, "a few stale-listing leases are read singly");
    await Promise.all(all.slice(45).map((l) => r.get(l.uuid)));
    assert.deepEqual(calls, { single: 5, listings: 2 }, "a burst lists again");
  });

  it("runs one listing at a time; leases it lacks wait for the next one", async () => {
    const first = many(0, 40);
    const { chain, calls, hold, release } = chainWith(first);
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    hold();
    const a = Promise.all(first.map((l) => r.get(l.uuid)));
    await new Promise((res) => setImmediate(res));
    await new Promise((res) => setImmediate(res));
    // A newer block: its leases exist only after the running listing took its snapshot.
    const second = many(100, 40);
    first.push(...second);
    const b = Promise.all(second.map((l) => r.get(l.uuid)));
    await new Promise((res) => setImmediate(res));
    assert.equal(calls.listings, 1, "no second listing while one runs");
    release();
    const [gotA, gotB] = await Promise.all([a, b]);
    assert.ok(gotA.every((l, i) => l?.uuid === first[i]!.uuid));
    assert.ok(gotB.every((l, i) => l?.uuid === second[i]!.uuid));
    assert.deepEqual(calls, { single: 0, listings: 2 });
  });

  it("answers requests page by page while the listing is still running", async () => {
    const all = many(0, 40);
    let releaseRest: () => void = () => {};
    const rest = new Promise<void>((r) => {
      releaseRest = r;
    });
    const chain = {
      getLease: async () => assert.fail("no single reads expected"),
      leasesByProvider: async (
        _p: string,
        _s: string,
        _signal: AbortSignal | undefined,
        onPage?: (page: readonly ChainLease[]) => void,
      ) => {
        onPage?.(all.slice(0, 20));
        await rest;
        onPage?.(all.slice(20));
        return all;
      },
    } as unknown as ChainPort;
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    const answered = new Set<string>();
    const done = Promise.all(all.map((l) => r.get(l.uuid).then((got) => answered.add(got!.uuid))));
    for (let i = 0; i < 5 && answered.size < 20; i++) await new Promise((res) => setImmediate(res));
    assert.deepEqual(
      [...answered].sort(),
      all.slice(0, 20).map((l) => l.uuid),
      "first page answered early",
    );
    releaseRest();
    await done;
    assert.equal(answered.size, 40);
  });

  it("keeps a listing slower than its time to live: the clock starts when it ends", async () => {
    const all = many(0, 80);
    const clock = new ManualClock();
    let releaseRest: () => void = () => {};
    const rest = new Promise<void>((r) => {
      releaseRest = r;
    });
    let listings = 0;
    const chain = {
      getLease: async () => assert.fail("no single reads expected"),
      leasesByProvider: async (
        _p: string,
        _s: string,
        _signal: AbortSignal | undefined,
        onPage?: (page: readonly ChainLease[]) => void,
      ) => {
        listings++;
        onPage?.(all.slice(0, 40));
        await rest;
        onPage?.(all.slice(40));
        return all;
      },
    } as unknown as ChainPort;
    const r = new ProvisionLeaseReads(chain, "p", clock, { listingTtlMs: 2_000 });
    const first = Promise.all(all.slice(0, 40).map((l) => r.get(l.uuid)));
    await first;
    clock.advance(5_000); // the listing is still running, long past the time to live
    const later = Promise.all(all.slice(40, 45).map((l) => r.get(l.uuid)));
    releaseRest();
    assert.deepEqual(
      (await later).map((l) => l?.uuid),
      all.slice(40, 45).map((l) => l.uuid),
    );
    clock.advance(1_000); // within the time to live of the listing's end
    assert.equal((await r.get(all[50]!.uuid))?.uuid, all[50]!.uuid);
    assert.equal(listings, 1);
  });

  it("a failed listing leaves every request to its own single read (the query pool bounds how many run at once)", async () => {
    let singles = 0;
    const chain = {
      getLease: async (uuid: string) => {
        singles++;
        return lease(Number(uuid.slice(-12)));
      },
      leasesByProvider: async () => {
        throw new Error("listing unavailable");
      },
    } as unknown as ChainPort;
    const r = new ProvisionLeaseReads(chain, "p", new ManualClock());
    const all = many(0, 100);
    const got = await Promise.all(all.map((l) => r.get(l.uuid)));
    assert.deepEqual(
      got.map((l) => l?.uuid),
      all.map((l) => l.uuid),
    );
    assert.equal(singles, 100);
  });
});
