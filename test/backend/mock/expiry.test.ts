import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { loadMockBackendConfig } from "../../../src/backend/mock/config.ts";
import { startMockBackend } from "../../../src/backend/mock/main.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { until } from "../../support/index.ts";
import { signedClient } from "../kit/signed-client.ts";
import { SECRET, SKU } from "./helpers.ts";

/**
 * Reservations expire: a provision whose substrate call hangs holds its capacity only
 * until reservation_ttl; then the capacity is released, the intent settles as failed with
 * its callback queued. Time is a ManualClock.
 */
describe("reservation expiry", () => {
  it("releases a hung provision's capacity after reservation_ttl and settles it failed", async () => {
    const clock = new ManualClock(Date.now());
    const lease = randomUUID();
    const config = loadMockBackendConfig({
      MOCK_BACKEND_ADDR: "127.0.0.1:0",
      MOCK_BACKEND_STORAGE_ID: randomUUID(),
      MOCK_BACKEND_CALLBACK_SECRET: SECRET,
      MOCK_BACKEND_HANG_LEASES: lease,
      MOCK_BACKEND_RESERVATION_TTL: "10m",
    });
    const b = await startMockBackend(config, { logger: createLogger("expiry", "silent"), clock });
    try {
      const op = randomUUID();
      const res = await signedClient(b.url, SECRET).post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1expiry",
        provider_uuid: randomUUID(),
        items: [{ sku: SKU, quantity: 2 }],
        // Nothing listens here: delivery is not what this test observes.
        callback_url: `http://127.0.0.1:9/callbacks/provision?operation_id=${op}`,
      });
      assert.equal(res.status, 202, res.text);
      await until(() => b.journal.getLease(lease)?.phase === "started", "intent started");
      assert.equal(b.engine.pool.stats().allocated_cpu_cores, 1);
      assert.equal(b.engine.pool.stats().reserved_leases, 1);

      // Just before the TTL nothing changes; the ticks run every 30 s of manual time.
      for (let t = 0; t < 19; t++) {
        clock.advance(30_000);
        await new Promise((r) => setImmediate(r));
      }
      assert.equal(b.journal.getLease(lease)?.status, "provisioning");
      for (let t = 0; t < 4; t++) {
        clock.advance(30_000);
        await new Promise((r) => setImmediate(r));
      }
      await until(() => b.journal.getLease(lease)?.status === "failed", "expiry settled");
      const settled = b.journal.getLease(lease);
      assert.equal(settled?.reason, "ProvisionTimeout");
      assert.equal(settled?.head, "none");
      assert.equal(b.engine.pool.stats().allocated_cpu_cores, 0);
      assert.equal(b.engine.pool.stats().reserved_leases, 0);
      const head = b.journal.outboxHead(lease);
      assert.equal(head?.kind, "operation");
      assert.equal(JSON.parse(head?.body ?? "{}").status, "failed");
      assert.deepEqual(
        b.journal.releases(lease).map((r) => r.status),
        ["failed"],
      );
    } finally {
      await b.close();
    }
  });
});
