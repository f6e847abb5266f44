import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { RunningBackend } from "../../../src/backend/kit/index.ts";
import { type Receiver, startReceiver } from "../kit/receiver.ts";
import { type SignedClient, signedClient } from "../kit/signed-client.ts";
import { manifest, SECRET, startTestMock } from "./helpers.ts";

/**
 * Retention on the mock (rows in the journal, no volumes): a close keeps the data, the
 * wire shows it (`deprovisioned` with retained, /retentions, /provisions/{uuid} retained),
 * and a restore adopts it into a fresh lease on the same, a larger or a fitting smaller
 * tier; a demote that does not fit, a foreign source or a bad shape is refused.
 */
const PROVIDER = "01234567-89ab-7def-8123-456789abcdef";
const TENANT = "manifest1retention";
const SMALL = "0190f3a2-7c1e-7000-8000-00000000c001";
const LARGE = "0190f3a2-7c1e-7000-8000-00000000c002";

describe("mock backend retention and restore", () => {
  const failingTarget = randomUUID();
  const hangingTarget = randomUUID();
  let b: RunningBackend;
  let rx: Receiver;
  let c: SignedClient;
  before(async () => {
    rx = await startReceiver(SECRET);
    b = await startTestMock({
      MOCK_BACKEND_RETAIN_ON_CLOSE: "1",
      MOCK_BACKEND_RETAINED_DISK_MB: "10",
      MOCK_BACKEND_FAIL_LEASES: failingTarget,
      MOCK_BACKEND_HANG_LEASES: hangingTarget,
      MOCK_BACKEND_SKUS: JSON.stringify({
        [SMALL]: { cpu_cores: 1, memory_mb: 256, disk_mb: 100 },
        [LARGE]: { cpu_cores: 1, memory_mb: 256, disk_mb: 400 },
      }),
    });
    c = signedClient(b.url, SECRET);
  });
  after(async () => {
    await b?.close();
    await rx?.close();
  });

  const ready = async (lease: string, sku = SMALL) => {
    const op = randomUUID();
    const res = await c.post("/provision", {
      lease_uuid: lease,
      tenant: TENANT,
      provider_uuid: PROVIDER,
      items: [{ sku, quantity: 1, service_name: "web" }],
      callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
      payload: Buffer.from(manifest("web")).toString("base64"),
    });
    assert.equal(res.status, 202, res.text);
    await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`));
  };
  const retained = async (lease: string) => {
    assert.equal((await c.post("/deprovision", { lease_uuid: lease })).status, 200);
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${lease}:deprovisioned`));
  };
  const restore = (target: string, from: string, sku = LARGE, extra: Record<string, unknown> = {}) => {
    const op = randomUUID();
    const url = `${rx.url}/callbacks/provision?operation_id=${op}`;
    return c
      .post("/restore", {
        lease_uuid: target,
        from_lease_uuid: from,
        tenant: TENANT,
        provider_uuid: PROVIDER,
        items: [{ sku, quantity: 1, service_name: "web" }],
        callback_url: url,
        lifecycle_callback_url: url.replace("operation_id", "lifecycle_id"),
        ...extra,
      })
      .then((res) => ({ res, op }));
  };
  const listed = async () =>
    ((await c.get("/retentions")).json as { retentions: { lease_uuid: string }[] }).retentions.map(
      (r) => r.lease_uuid,
    );

  it("retains on close and shows the retained lease on the wire", async () => {
    const lease = randomUUID();
    await ready(lease);
    await retained(lease);
    const cb = rx.deliveries.find((d) => d.body.lease_uuid === lease && d.body.status === "deprovisioned");
    assert.equal(cb?.body.retained, true);
    assert.ok((await listed()).includes(lease));
    const info = (await c.get(`/provisions/${lease}`)).json as Record<string, unknown>;
    assert.equal(info.status, "retained");
    assert.deepEqual(info.items, [{ service_name: "web", sku: SMALL, quantity: 1 }]);
    assert.equal(typeof info.restore_hint, "string");
    assert.equal(typeof info.retained_until, "string");
    assert.equal(info.partition, undefined, "no partition source configured");
    const all = (await c.get("/provisions")).json as { provisions: { lease_uuid: string }[] };
    assert.ok(!all.provisions.some((p) => p.lease_uuid === lease), "a retained lease is not live");
    assert.equal(b.engine.pool.stats().retained_disk_mb, 10 * (await listed()).length);
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    assert.match(metrics, /^fred_backend_retained_leases\{status="active"\} 1$/m);
  });

  it("restores onto a larger tier: the destination runs the retained manifest and the source is gone", async () => {
    const source = randomUUID();
    const target = randomUUID();
    await ready(source);
    await retained(source);
    const { res } = await restore(target, source);
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(res.json, { status: "restoring" });
    await rx.waitFor((r) => r.effects.includes(`operation:${target}:success`));
    const info = (await c.get(`/provisions/${target}`)).json as Record<string, unknown>;
    assert.equal(info.status, "ready");
    assert.equal(info.sku, LARGE);
    const releases = (await c.get(`/releases/${target}`)).json as { manifest: string }[];
    assert.deepEqual(Buffer.from(releases[0]?.manifest ?? "", "base64"), Buffer.from(manifest("web")));
    assert.ok(!(await listed()).includes(source), "the adopted source is no longer restorable");
    assert.equal((await c.get(`/provisions/${source}`)).status, 404);
    // A second restore of the same source finds nothing.
    assert.equal((await restore(randomUUID(), source)).res.status, 422);
  });

  it("refuses a demote whose measured data does not fit, and keeps the data", async () => {
    const source = randomUUID();
    await ready(source, LARGE);
    const sized = await c.post(`/_mock/retained-size/${source}`, { disk_mb: 150 });
    assert.equal(sized.status, 200, sized.text);
    await retained(source);
    const refused = await restore(randomUUID(), source, SMALL);
    assert.equal(refused.res.status, 422);
    assert.equal((refused.res.json as { code?: string }).code, "demote_exceeds_tier");
    assert.match(
      (refused.res.json as { error: string }).error,
      /^retained data exceeds the requested smaller tier/,
    );
    assert.ok((await listed()).includes(source));
    const target = randomUUID();
    assert.equal((await restore(target, source, LARGE)).res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${target}:success`));
  });

  it("allows a demote when the data fits", async () => {
    const source = randomUUID();
    const target = randomUUID();
    await ready(source, LARGE);
    await retained(source);
    assert.equal((await restore(target, source, SMALL)).res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${target}:success`));
  });

  it("refuses bad restores without touching the retained data", async () => {
    const source = randomUUID();
    await ready(source);
    await retained(source);
    const bare = (res: { status: number; json: unknown }) => {
      assert.equal(res.status, 422);
      assert.equal((res.json as { code?: string }).code, undefined, "a bare 422");
    };
    bare((await restore(randomUUID(), randomUUID())).res);
    bare((await restore(randomUUID(), source, LARGE, { tenant: "manifest1someoneelse" })).res);
    bare((await restore(randomUUID(), source, LARGE, { provider_uuid: randomUUID() })).res);
    assert.equal((await restore(source, source)).res.status, 400);
    const shape = await restore(randomUUID(), source, LARGE, {
      items: [{ sku: LARGE, quantity: 2, service_name: "web" }],
    });
    assert.equal(shape.res.status, 400);
    assert.match((shape.res.json as { error: string }).error, /items do not match the retained set/);
    const live = randomUUID();
    await ready(live);
    const busy = await restore(live, source);
    assert.equal(busy.res.status, 409);
    assert.ok((await listed()).includes(source));
    // Same operation delivered twice: one restore, acknowledged twice.
    const target = randomUUID();
    const first = await restore(target, source);
    assert.equal(first.res.status, 202);
    const url = `${rx.url}/callbacks/provision?operation_id=${first.op}`;
    const again = await c.post("/restore", {
      lease_uuid: target,
      from_lease_uuid: source,
      tenant: TENANT,
      provider_uuid: PROVIDER,
      items: [{ sku: LARGE, quantity: 1, service_name: "web" }],
      callback_url: url,
      lifecycle_callback_url: url.replace("operation_id", "lifecycle_id"),
    });
    assert.equal(again.status, 202, again.text);
    await rx.waitFor((r) => r.effects.includes(`operation:${target}:success`));
    assert.equal(rx.deliveries.filter((d) => d.body.lease_uuid === target).length, 1);
  });

  it("a restore in flight shows restarting; closing its target hands the data back", async () => {
    const source = randomUUID();
    await ready(source);
    await retained(source);
    assert.equal((await restore(hangingTarget, source)).res.status, 202);
    const info = (await c.get(`/provisions/${hangingTarget}`)).json as Record<string, unknown>;
    assert.equal(info.status, "restarting");
    assert.ok((await listed()).includes(source), "the source stays a finalizer until the commit");
    assert.equal((await restore(randomUUID(), source)).res.status, 409, "one restore at a time");
    await c.post("/deprovision", { lease_uuid: hangingTarget });
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${hangingTarget}:deprovisioned`));
    const cb = rx.deliveries.find(
      (d) => d.body.lease_uuid === hangingTarget && d.body.status === "deprovisioned",
    );
    assert.equal(cb?.body.retained, false, "the pre-empted target's copy is destroyed, not retained");
    assert.equal(b.retention?.store.get(source)?.status, "active", "handed back");
    const target = randomUUID();
    assert.equal((await restore(target, source)).res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${target}:success`));
  });

  it("a restore that fails hands the data back with RestoreFailed", async () => {
    const source = randomUUID();
    await ready(source);
    await retained(source);
    assert.equal((await restore(failingTarget, source)).res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${failingTarget}:failed`));
    const info = (await c.get(`/provisions/${failingTarget}`)).json as Record<string, unknown>;
    assert.equal(info.reason, "RestoreFailed");
    assert.ok((await listed()).includes(source), "the source is restorable again");
    const target = randomUUID();
    assert.equal((await restore(target, source)).res.status, 202);
    await rx.waitFor((r) => r.effects.includes(`operation:${target}:success`));
    // The failed destination's close destroys (its copy was handed back), never retains.
    await c.post("/deprovision", { lease_uuid: failingTarget });
    await rx.waitFor((r) => r.effects.includes(`lifecycle:${failingTarget}:deprovisioned`));
    const cb = rx.deliveries.find(
      (d) => d.body.lease_uuid === failingTarget && d.body.status === "deprovisioned",
    );
    assert.equal(cb?.body.retained, false);
    assert.ok(!(await listed()).includes(failingTarget));
  });
});
