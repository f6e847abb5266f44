import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ChainLease, ChainPort } from "../../../src/chain/port.ts";
import { LeaseReader } from "../../../src/provider/lifecycle/lease-reader.ts";

/** A chain that answers from a fixed lease list and counts the queries it served. */
function chainWith(leases: ChainLease[]) {
  const calls = { single: 0, listings: 0 };
  const chain = {
    getLease: async (uuid: string) => {
      calls.single++;
      return leases.find((l) => l.uuid === uuid);
    },
    leasesByProvider: async (_p: string, state: string) => {
      calls.listings++;
      return leases.filter((l) => l.state === state);
    },
  } as unknown as ChainPort;
  return { chain, calls };
}

const lease = (i: number, state: ChainLease["state"] = "LEASE_STATE_PENDING") =>
  ({ uuid: `0190f3a2-7c1e-7000-8000-${String(i).padStart(12, "0")}`, state }) as ChainLease;

describe("LeaseReader", () => {
  it("reads a few leases one by one", async () => {
    const { chain, calls } = chainWith([lease(1), lease(2)]);
    const r = new LeaseReader(chain, "p", 32);
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
    const r = new LeaseReader(chain, "p", 32);
    const got = await Promise.all(all.map((l) => r.get(l.uuid)));
    assert.deepEqual(
      got.map((l) => l?.state),
      all.map((l) => l.state),
    );
    assert.deepEqual(calls, { single: 1, listings: 1 });
    assert.equal(r.sweeps, 1);
  });
});
