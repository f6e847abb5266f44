import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { afterEach, describe, it } from "node:test";
import { SETTLED_PROVISION_READ_MS } from "../../../src/provider/api/provision-reads.ts";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { Harness } from "./harness.ts";
import { call } from "./tenant-client.ts";

/**
 * `GET status` reads the backend's provision record once per lease and reuses it:
 * concurrent polls share one backend call; a transitional answer is reused for the
 * chain-read TTL, a settled one (ready, retained) for SETTLED_PROVISION_READ_MS unless a
 * callback for the lease is applied first; a failed backend read is not reused.
 */
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000c1";
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

function countingBackend(answer: () => Promise<Record<string, unknown> | undefined>) {
  const backend = { calls: 0 };
  const client = {
    backend: { name: "one", fenced: false },
    provisionInfo: async () => {
      backend.calls++;
      return answer();
    },
  } as unknown as BackendClient;
  return { backend, clients: new Map([["one", client]]) };
}

describe("status: the backend read behind it", () => {
  it("concurrent polls share one backend call and a poll within the TTL reuses it", async () => {
    const { backend, clients } = countingBackend(async () => ({ status: "provisioning", fail_count: 0 }));
    h = await new Harness().start({ clients, leaseReads: { ttlMs: 1_000 } });
    h.lease(LEASE);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => call(h!.url, `/v1/leases/${LEASE}/status`, h!.token(LEASE))),
    );
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.equal(a.body.provision_status, "provisioning");
    }
    assert.equal(backend.calls, 1, "eight concurrent polls, one backend call");
    await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(backend.calls, 1, "within the TTL the answer is reused");
    h.clock.advance(1_001);
    const later = await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(later.status, 200);
    assert.equal(backend.calls, 2, "past the TTL a transitional answer is asked again");
  });

  it("a ready record is kept until a callback for its lease, at most the settled bound", async () => {
    let record: Record<string, unknown> = { status: "ready", fail_count: 0 };
    const { backend, clients } = countingBackend(async () => record);
    const callbacks = new EventEmitter();
    h = await new Harness().start({ clients, callbacks, leaseReads: { ttlMs: 1_000 } });
    h.lease(LEASE);
    const status = async () => (await call(h!.url, `/v1/leases/${LEASE}/status`, h!.token(LEASE))).body;
    assert.equal((await status()).provision_status, "ready");
    h.clock.advance(5_000);
    assert.equal((await status()).provision_status, "ready");
    assert.equal(backend.calls, 1, "a settled answer outlives the chain-read TTL");
    // A callback for another lease changes nothing here.
    callbacks.emit("callback-applied", { leaseUuid: "0190f3a2-7c1e-7000-8000-0000000000c2" }, "observed");
    await status();
    assert.equal(backend.calls, 1);
    // The workload died: the backend's record changes and its callback is applied.
    record = { status: "failed", fail_count: 1, reason: "ContainerExited", message: "exited with code 137" };
    callbacks.emit("callback-applied", { leaseUuid: LEASE }, "observed");
    const after = await status();
    assert.equal(backend.calls, 2, "the callback dropped the kept record");
    assert.equal(after.provision_status, "failed");
    assert.equal(after.reason, "ContainerExited");
    // Back to ready (a restart the backend reported); with no callback at all, the bound holds.
    record = { status: "ready", fail_count: 1 };
    h.clock.advance(1_001);
    assert.equal((await status()).provision_status, "ready");
    record = { status: "failed", fail_count: 2, reason: "ContainerExited" };
    h.clock.advance(SETTLED_PROVISION_READ_MS - 1);
    assert.equal((await status()).provision_status, "ready", "within the bound, the kept record");
    h.clock.advance(1);
    assert.equal((await status()).provision_status, "failed", "never older than the bound");
  });

  it("a failed backend read drops the fields and is not reused", async () => {
    let fail = true;
    const { backend, clients } = countingBackend(async () => {
      if (fail) throw new Error("SQLITE_BUSY: database is locked at /var/lib/fred/journal.db");
      return { status: "failed", fail_count: 2, reason: "ContainerExited", message: "exited with code 1" };
    });
    h = await new Harness().start({ clients, leaseReads: { ttlMs: 1_000 } });
    h.lease(LEASE);
    const first = await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(first.status, 200);
    assert.equal(first.body.provision_status, undefined);
    assert.doesNotMatch(JSON.stringify(first.body), /SQLITE|journal\.db/);
    fail = false;
    const second = await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(backend.calls, 2, "the failure was not kept");
    assert.equal(second.body.provision_status, "failed");
    assert.equal(second.body.fail_count, 2);
    assert.equal(second.body.reason, "ContainerExited");
  });
});
