import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { startBackend } from "../../../src/backend/kit/index.ts";
import { DEFAULT_MOCK_PROFILE } from "../../../src/backend/mock/config.ts";
import { MockSubstrate } from "../../../src/backend/mock/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { until } from "../../support/index.ts";
import { manifest, SECRET, SKU } from "../mock/helpers.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { signedClient } from "./signed-client.ts";

/**
 * POST /reconcile_custom_domain and what GET /provisions then reports in the lease's items:
 * providerd's sweep sends the call only while the reported domains differ from the chain's,
 * so a report must never claim domains the substrate failed to apply.
 */
describe("custom domains in the inventory", () => {
  let rx: Receiver;
  let failing = false;
  const applied: string[] = [];
  const substrate = new MockSubstrate({
    clock: systemClock,
    backendName: "domains",
    delayMs: 0,
    failRate: 0,
    failLeases: new Set(),
    hangLeases: new Set(),
  });
  Object.assign(substrate, {
    reconcileCustomDomains: async (_lease: string, items: { custom_domain?: string }[]) => {
      if (failing) throw new Error("ingress unavailable");
      applied.push(items.map((i) => i.custom_domain ?? "").join(","));
    },
  });
  let b: Awaited<ReturnType<typeof startBackend>>;
  before(async () => {
    rx = await startReceiver(SECRET);
    b = await startBackend({
      name: "domains",
      substrate,
      journal: { path: ":memory:", mode: "bind-or-verify", storageId: randomUUID() },
      logger: createLogger("custom-domains-test", "silent"),
      secret: SECRET,
      listen: { host: "127.0.0.1", port: 0 },
      resolveSku: () => DEFAULT_MOCK_PROFILE,
      pool: { totals: { cpuCores: 4, memoryMb: 4096, diskMb: 4096 } },
    });
  });
  after(async () => {
    await b?.close();
    await rx?.close();
  });

  it("reports what was applied; a failed apply leaves the earlier report, so the sweep retries", async () => {
    const c = signedClient(b.url, SECRET);
    const lease = randomUUID();
    const res = await c.post("/provision", {
      lease_uuid: lease,
      tenant: "manifest1domains",
      provider_uuid: randomUUID(),
      items: [{ sku: SKU, quantity: 1, service_name: "web" }],
      callback_url: `${rx.url}/callbacks/provision?operation_id=${randomUUID()}`,
      payload: Buffer.from(manifest("web", "docker.io/library/nginx:1.25")).toString("base64"),
    });
    assert.equal(res.status, 202, res.text);
    await until(() => b.journal.getLease(lease)?.status === "ready", "the provision to be ready");
    const reported = async () => {
      const page = (await c.get(`/provisions?lease_uuid=${lease}`)).json as {
        provisions: { items: { service_name?: string; custom_domain?: string }[] }[];
      };
      return page.provisions[0]?.items;
    };
    assert.deepEqual(await reported(), [{ sku: SKU, quantity: 1, service_name: "web" }]);
    const body = {
      lease_uuid: lease,
      items: [{ sku: SKU, quantity: 1, service_name: "web", custom_domain: "app.example.com" }],
    };

    failing = true;
    assert.equal((await c.post("/reconcile_custom_domain", body)).status, 500);
    assert.deepEqual(await reported(), [{ sku: SKU, quantity: 1, service_name: "web" }]);

    failing = false;
    assert.equal((await c.post("/reconcile_custom_domain", body)).status, 204);
    assert.deepEqual(await reported(), [
      { sku: SKU, quantity: 1, service_name: "web", custom_domain: "app.example.com" },
    ]);
    assert.deepEqual(applied, ["app.example.com"]);
  });
});
