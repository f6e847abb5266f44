import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ChainPort } from "../../../src/chain/port.ts";
import { isFredError } from "../../../src/core/errors.ts";

/**
 * The Chain port's contract: one set of cases, run against every implementation (the
 * recording fake the lifecycle suites use, and CosmosChain on a real devnet), so the
 * fake cannot drift from what the chain does.
 */
export interface PortUnderTest {
  port: ChainPort;
  providerUuid: string;
  chainId: string;
  /** The page size the port lists with (leasesByProvider delivers pages of it). */
  pageLimit: number;
  /** Creates `n` new PENDING leases of `providerUuid`; returns their UUIDs. */
  createPending(n: number): Promise<string[]>;
  close(): Promise<void>;
}

/** A canonical UUID (v7, as the chain issues them) no chain has a lease or provider for. */
const NOBODY = "01a22a2c-bb6b-7001-8d68-000000000000";

export function chainPortContract(name: string, open: () => Promise<PortUnderTest>): void {
  describe(`ChainPort contract: ${name}`, () => {
    let t: PortUnderTest;
    before(async () => {
      t = await open();
    });
    after(async () => {
      await t?.close();
    });

    it("getLease: the lease, undefined when the chain has none, ERR_INVALID_ARGUMENT before asking", async () => {
      const [uuid] = await t.createPending(1);
      const lease = await t.port.getLease(uuid!);
      assert.equal(lease?.uuid, uuid);
      assert.equal(lease?.state, "LEASE_STATE_PENDING");
      assert.equal(lease?.providerUuid, t.providerUuid);
      assert.equal(await t.port.getLease(NOBODY), undefined);
      await assert.rejects(t.port.getLease("not-a-uuid"), (e) => isFredError(e, "ERR_INVALID_ARGUMENT"));
    });

    it("leasesByProvider: every page in UUID order, filtered by state; onPage sees each page", async () => {
      const created = await t.createPending(t.pageLimit + 1);
      const pages: string[][] = [];
      const pending = await t.port.leasesByProvider(t.providerUuid, "LEASE_STATE_PENDING", undefined, (p) =>
        pages.push(p.map((l) => l.uuid)),
      );
      const uuids = pending.map((l) => l.uuid);
      assert.deepEqual(uuids, [...uuids].sort(), "UUID order");
      for (const u of created) assert.ok(uuids.includes(u), `${u} listed`);
      assert.ok(pending.every((l) => l.state === "LEASE_STATE_PENDING" && l.providerUuid === t.providerUuid));
      assert.ok(pages.length >= 2, `${pages.length} page(s)`);
      assert.ok(pages.every((p) => p.length <= t.pageLimit));
      assert.deepEqual(pages.flat(), uuids, "the pages are the result");
      assert.deepEqual(await t.port.leasesByProvider(NOBODY, undefined), []);
      await assert.rejects(t.port.leasesByProvider("x", undefined), (e) =>
        isFredError(e, "ERR_INVALID_ARGUMENT"),
      );
    });

    it("leasePagesByProvider: the same pages as leasesByProvider, ERR_INVALID_ARGUMENT before asking", async () => {
      await t.createPending(t.pageLimit + 1);
      const listed = await t.port.leasesByProvider(t.providerUuid, "LEASE_STATE_PENDING");
      const pages: string[][] = [];
      await t.port.leasePagesByProvider(t.providerUuid, "LEASE_STATE_PENDING", (p) =>
        pages.push(p.map((l) => l.uuid)),
      );
      assert.ok(pages.length >= 2, `${pages.length} page(s)`);
      assert.ok(pages.every((p) => p.length <= t.pageLimit));
      assert.deepEqual(
        pages.flat(),
        listed.map((l) => l.uuid),
      );
      const none: unknown[] = [];
      await t.port.leasePagesByProvider(NOBODY, undefined, (p) => none.push(...p));
      assert.deepEqual(none, []);
      await assert.rejects(
        t.port.leasePagesByProvider("x", undefined, () => {}),
        (e) => isFredError(e, "ERR_INVALID_ARGUMENT"),
      );
    });

    it("acknowledge: PENDING becomes ACTIVE; again is already_done; a bad or unknown lease fails alone", async () => {
      const [a, b] = await t.createPending(2);
      const first = await t.port.acknowledge([a!]);
      assert.deepEqual(
        first.map((o) => [o.leaseUuid, o.status]),
        [[a, "acknowledged"]],
      );
      assert.equal(typeof first[0]?.txHash, "string");
      assert.equal((await t.port.getLease(a!))?.state, "LEASE_STATE_ACTIVE");
      const mixed = await t.port.acknowledge([a!, "nope", b!, NOBODY]);
      assert.deepEqual(
        mixed.map((o) => [o.leaseUuid, o.status]),
        [
          [a, "already_done"],
          ["nope", "failed"],
          [b, "acknowledged"],
          [NOBODY, "failed"],
        ],
      );
      assert.ok(isFredError(mixed[1]?.error, "ERR_INVALID_ARGUMENT"));
      assert.ok(isFredError(mixed[3]?.error, "ERR_LEASE_NOT_FOUND"));
    });

    it("reject and close: each lease gets its outcome from its own state", async () => {
      const [p, q, r] = await t.createPending(3);
      assert.equal((await t.port.acknowledge([q!]))[0]?.status, "acknowledged");
      const rejected = await t.port.reject([p!, q!], "provisioning failed");
      assert.deepEqual(
        rejected.map((o) => o.status),
        ["rejected", "failed"],
      );
      assert.ok(isFredError(rejected[1]?.error, "ERR_LEASE_NOT_PENDING"));
      assert.equal((await t.port.getLease(p!))?.state, "LEASE_STATE_REJECTED");
      assert.equal((await t.port.getLease(p!))?.rejectionReason, "provisioning failed");
      const closed = await t.port.closeLeases([q!, r!], "tenant gone");
      assert.deepEqual(
        closed.map((o) => o.status),
        ["closed", "failed"],
      );
      assert.ok(isFredError(closed[1]?.error, "ERR_LEASE_NOT_ACTIVE"));
      assert.equal((await t.port.getLease(q!))?.state, "LEASE_STATE_CLOSED");
      assert.equal((await t.port.closeLeases([q!], "again"))[0]?.status, "already_done");
      assert.equal((await t.port.getLease(r!))?.state, "LEASE_STATE_PENDING");
    });

    it("network, lease history and the latest block", async () => {
      assert.equal(await t.port.network(), t.chainId);
      await t.createPending(1);
      assert.equal(await t.port.hasLeaseHistory(t.providerUuid), true);
      assert.equal(await t.port.hasLeaseHistory(NOBODY), false);
      await assert.rejects(t.port.hasLeaseHistory("x"), (e) => isFredError(e, "ERR_INVALID_ARGUMENT"));
      const block = await t.port.latestBlock();
      assert.ok(Number.isInteger(block.height) && block.height >= 1);
      assert.ok(block.time instanceof Date && !Number.isNaN(block.time.getTime()));
      const events = await t.port.blockEvents(block.height, new AbortController().signal);
      assert.ok(Array.isArray(events), "finalize-block events are a list");
    });
  });
}
