import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { RunningBackend } from "../../../src/backend/kit/index.ts";
import { until } from "../../support/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import { SECRET, SKU, startTestMock } from "./helpers.ts";

/** Mock-specific behaviour on the real kit: failure injection, re-provision, pre-emption, quotas of the SKU map. */
const PROVIDER = "01234567-89ab-7def-8123-456789abcdef";

describe("mock backend behaviour", () => {
  const failing = randomUUID();
  const hanging = randomUUID();
  const known = "0190f3a2-7c1e-7000-8000-00000000b002";
  let b: RunningBackend;
  let rx: Receiver;
  let c: SignedClient;
  before(async () => {
    rx = await startReceiver(SECRET);
    b = await startTestMock({
      MOCK_BACKEND_FAIL_LEASES: failing,
      MOCK_BACKEND_HANG_LEASES: hanging,
      MOCK_BACKEND_SKUS: JSON.stringify({
        [SKU]: { cpu_cores: 1, memory_mb: 256 },
        [known]: { cpu_cores: 2, memory_mb: 512, disk_mb: 10 },
      }),
    });
    c = signedClient(b.url, SECRET);
  });
  after(async () => {
    await b?.close();
    await rx?.close();
  });
  const provision = (lease: string, op = randomUUID(), sku = SKU) =>
    c
      .post("/provision", {
        lease_uuid: lease,
        tenant: "manifest1behaviour",
        provider_uuid: PROVIDER,
        items: [{ sku, quantity: 1 }],
        callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
      })
      .then((res) => ({ res, op }));

  it("reports an injected start failure with a reason, then accepts a new operation as release 2", async () => {
    const first = await provision(failing);
    assert.equal(first.res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${failing}:failed`));
    const d = rx.deliveries.find((x) => x.body.lease_uuid === failing);
    assert.equal(d?.body.error, "workload exited during startup");
    const info = await c.get(`/provisions/${failing}`);
    assert.equal((info.json as { status: string }).status, "failed");
    assert.equal((info.json as { reason: string }).reason, "ContainerExited");
    assert.equal((info.json as { fail_count: number }).fail_count, 1);
    assert.equal((await c.get(`/info/${failing}`)).status, 404);
    assert.equal(b.engine.pool.stats().allocated_cpu_cores, 0, "a failed lease holds no capacity");
    // Same operation again: acknowledged, no new work.
    const again = await c.post("/provision", {
      lease_uuid: failing,
      tenant: "manifest1behaviour",
      provider_uuid: PROVIDER,
      items: [{ sku: SKU, quantity: 1 }],
      callback_url: `${rx.url}/callbacks/provision?operation_id=${first.op}`,
    });
    assert.equal(again.status, 202);
    const releases = await c.get(`/releases/${failing}`);
    assert.deepEqual(
      (releases.json as { status: string }[]).map((r) => r.status),
      ["failed"],
    );
  });

  it("a close pre-empts a hung provision: failed result first, then deprovisioned", async () => {
    const { res } = await provision(hanging);
    assert.equal(res.status, 202);
    await until(() => b.journal.getLease(hanging)?.phase === "started", "the hung provision to start", {
      intervalMs: 10,
    });
    assert.equal((await c.post("/deprovision", { lease_uuid: hanging })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${hanging}:deprovisioned`));
    const mine = rx.deliveries
      .filter((d) => d.body.lease_uuid === hanging)
      .map((d) => `${d.route}:${d.body.status}`);
    assert.deepEqual(mine, ["operation:failed", "lifecycle:deprovisioned"]);
    assert.equal(b.engine.pool.stats().allocated_cpu_cores, 0);
  });

  it("refuses an unknown SKU with 400 unknown_sku when a SKU map is configured", async () => {
    const lease = randomUUID();
    const { res } = await provision(lease, randomUUID(), randomUUID());
    assert.equal(res.status, 400);
    assert.equal((res.json as { validation_code: string }).validation_code, "unknown_sku");
    assert.equal((await c.get(`/provisions/${lease}`)).status, 404);
  });

  it("freezes the SKU profile into the allocation", async () => {
    const lease = randomUUID();
    const { res } = await provision(lease, randomUUID(), known);
    assert.equal(res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`));
    const stats = b.engine.pool.stats();
    assert.equal(stats.allocated_cpu_cores, 2);
    assert.equal(stats.allocated_memory_mb, 512);
    assert.equal(stats.allocated_disk_mb, 10);
    assert.deepEqual(b.journal.getLease(lease)?.instances[0]?.profile, {
      cpu_cores: 2,
      memory_mb: 512,
      disk_mb: 10,
    });
  });

  it("refuses a manifest whose services do not match the items (400 invalid_manifest)", async () => {
    const lease = randomUUID();
    const res = await c.post("/provision", {
      lease_uuid: lease,
      tenant: "manifest1behaviour",
      provider_uuid: PROVIDER,
      items: [{ sku: SKU, quantity: 1, service_name: "web" }],
      callback_url: `${rx.url}/callbacks/provision?operation_id=${randomUUID()}`,
      payload: Buffer.from(JSON.stringify({ services: { db: { image: "redis:7" } } })).toString("base64"),
    });
    assert.equal(res.status, 400);
    assert.equal((res.json as { validation_code: string }).validation_code, "invalid_manifest");
    const bad = await c.post("/provision", {
      lease_uuid: lease,
      tenant: "manifest1behaviour",
      provider_uuid: PROVIDER,
      items: [{ sku: SKU, quantity: 1 }],
      callback_url: `${rx.url}/callbacks/provision?operation_id=${randomUUID()}`,
      payload: Buffer.from("{not json").toString("base64"),
    });
    assert.equal(bad.status, 400);
    assert.equal((bad.json as { validation_code: string }).validation_code, "invalid_manifest");
  });
});
