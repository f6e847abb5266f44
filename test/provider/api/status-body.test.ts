import assert from "node:assert/strict";
import { join } from "node:path";
import { afterEach, describe, it } from "node:test";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { PayloadStore } from "../../../src/provider/store/index.ts";
import { chainLease, Harness } from "./harness.ts";
import { call } from "./tenant-client.ts";

/**
 * `GET status` reuses the JSON of its last answer for a lease while everything it was
 * built from is unchanged. Every write between two polls must show in the second one:
 * a payload stored or deleted, an attempt recorded or settled, a new chain read, a new
 * backend read, a credit change. The chain and backend reads are kept one TTL (1 s here).
 */
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000d1";
const OP = "33333333-3333-4333-8333-333333333333";
let h: Harness | undefined;
let payloads: PayloadStore | undefined;

afterEach(async () => {
  await h?.close();
  payloads?.close();
  h = undefined;
  payloads = undefined;
});

function backendSaying(answer: { status: string }) {
  const client = {
    backend: { name: "one", fenced: false },
    provisionInfo: async () => ({ ...answer, fail_count: 0 }),
  } as unknown as BackendClient;
  return new Map([["one", client]]);
}

describe("status: the reused answer follows every change", () => {
  it("payload, attempt, chain state and backend status each show on the very next poll", async () => {
    const backend = { status: "provisioning" };
    let credit = { balance: "10umfx", burn_rate_per_hour: "1umfx", depletes_at: null as string | null };
    h = await new Harness().start((hh) => {
      payloads = PayloadStore.open(join(hh.dir, "payloads.db"));
      return {
        payloads,
        clients: backendSaying(backend),
        leaseReads: { ttlMs: 1_000 },
        credit: async () => credit,
      };
    });
    h.lease(LEASE);
    const poll = () => call(h!.url, `/v1/leases/${LEASE}/status?include=credit`, h!.token(LEASE));

    const first = await poll();
    assert.equal(first.status, 200);
    assert.equal(first.headers.get("content-type"), "application/json; charset=utf-8");
    assert.equal(first.body.payload_received, false);
    assert.equal(first.body.provisioning_started, false);
    assert.equal(first.body.provision_status, "provisioning");
    const again = await poll();
    assert.equal(again.text, first.text, "nothing changed: the same bytes");

    await payloads!.put(LEASE, Buffer.from("manifest"), h.clock.now());
    assert.equal((await poll()).body.payload_received, true, "stored payload seen at once");

    h.store.recordAttempt({
      leaseUuid: LEASE,
      backend: "one",
      operationId: OP,
      kind: "provision",
      createdAt: h.clock.now(),
    });
    assert.equal((await poll()).body.provisioning_started, true, "recorded attempt seen at once");

    h.store.settleOperation(LEASE, OP, "failed", h.clock.now());
    assert.equal((await poll()).body.provisioning_started, false, "settled attempt seen at once");

    await payloads!.delete(LEASE);
    assert.equal((await poll()).body.payload_received, false, "deleted payload seen at once");

    credit = { balance: "9umfx", burn_rate_per_hour: "1umfx", depletes_at: null };
    assert.deepEqual((await poll()).body.credit, credit, "new credit seen at once");

    // The chain and backend reads are reused within their TTL (as before); past it, the
    // new chain state and the backend's new status are in the answer.
    h.leases.set(LEASE, chainLease(LEASE, h.tenant, "LEASE_STATE_CLOSED"));
    backend.status = "ready";
    h.clock.advance(1_001);
    const later = await poll();
    assert.equal(later.body.state, "LEASE_STATE_CLOSED");
    assert.equal(later.body.provision_status, "ready");
    assert.deepEqual(JSON.parse(later.text), later.body);
  });

  it("another tenant's token never gets the reused answer", async () => {
    h = await new Harness().start({ leaseReads: { ttlMs: 1_000 } });
    h.lease(LEASE);
    const mine = await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(mine.status, 200);
    const theirs = await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE, h.other));
    assert.equal(theirs.status, 403);
    assert.doesNotMatch(theirs.text, new RegExp(h.tenant));
  });
});
