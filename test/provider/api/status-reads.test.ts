import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import type { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { Harness } from "./harness.ts";
import { call } from "./tenant-client.ts";

/**
 * `GET status` reads the backend's provision record once per lease per chain-read TTL:
 * concurrent polls share one backend call, a poll within the TTL reuses its answer, and a
 * failed backend read is not reused.
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
    const { backend, clients } = countingBackend(async () => ({ status: "ready", fail_count: 0 }));
    h = await new Harness().start({ clients, leaseReads: { ttlMs: 1_000 } });
    h.lease(LEASE);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => call(h!.url, `/v1/leases/${LEASE}/status`, h!.token(LEASE))),
    );
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.equal(a.body.provision_status, "ready");
    }
    assert.equal(backend.calls, 1, "eight concurrent polls, one backend call");
    await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(backend.calls, 1, "within the TTL the answer is reused");
    h.clock.advance(1_001);
    const later = await call(h.url, `/v1/leases/${LEASE}/status`, h.token(LEASE));
    assert.equal(later.status, 200);
    assert.equal(backend.calls, 2, "past the TTL the backend is asked again");
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
