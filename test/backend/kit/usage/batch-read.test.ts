import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { RunningBackend } from "../../../../src/backend/kit/index.ts";
import { usagePageSchema } from "../../../../src/core/backend-contract/index.ts";
import { until } from "../../../support/index.ts";
import { manifest, SECRET, SKU, startTestMock } from "../../mock/helpers.ts";
import { type Receiver, startReceiver } from "../receiver.ts";
import { type SignedClient, signedClient } from "../signed-client.ts";

/**
 * The batch usage read `GET /usage` on the kit (a real mock backend over HTTP): every
 * sampled lease's current figures in lease UUID order, keyset pages with `continue`, the
 * same figures as the per-lease read, bad parameters refused with 400, unsigned requests
 * 401, and 501 `unsupported` from a backend that cannot sample.
 */
type Page = { sample_interval_seconds: number; leases: { lease_uuid: string }[]; continue?: string };

let sampling: RunningBackend;
let noSampling: RunningBackend;
let rx: Receiver;
let c: SignedClient;
const leases: string[] = [];

async function provision(lease: string): Promise<void> {
  const op = randomUUID();
  const res = await c.post("/provision", {
    lease_uuid: lease,
    tenant: "manifest1tenantusagebatch0000000000000000",
    provider_uuid: "01234567-89ab-7def-8123-456789abcdef",
    items: [{ sku: SKU, quantity: 1, service_name: "app" }],
    callback_url: `${rx.url}/callbacks/provision?operation_id=${op}`,
    payload: Buffer.from(manifest("app")).toString("base64"),
  });
  assert.equal(res.status, 202, res.text);
  await rx.waitFor((r) => r.effects.includes(`operation:${lease}:success`), 20_000);
}

before(async () => {
  sampling = await startTestMock({ MOCK_BACKEND_USAGE_SAMPLE_INTERVAL: "50ms" });
  noSampling = await startTestMock({ MOCK_BACKEND_USAGE: "0" });
  rx = await startReceiver(SECRET);
  c = signedClient(sampling.url, SECRET);
  for (let i = 0; i < 5; i++) {
    const lease = randomUUID();
    await provision(lease);
    leases.push(lease);
  }
  leases.sort();
  await until(
    async () => ((await c.get("/usage")).json as Page).leases.length === leases.length,
    "every lease sampled",
  );
});

after(async () => {
  await rx?.close();
  await sampling?.close();
  await noSampling?.close();
});

describe("kit GET /usage (batch read of current usage)", () => {
  it("lists every sampled lease in UUID order with its instances' current figures and no history", async () => {
    const res = await c.get("/usage");
    assert.equal(res.status, 200, res.text);
    const body = res.json as Page & {
      leases: { lease_uuid: string; instances: Record<string, unknown>[] }[];
    };
    assert.deepEqual(Object.keys(body).sort(), ["leases", "sample_interval_seconds"]);
    assert.equal(body.sample_interval_seconds, 0.05);
    assert.deepEqual(
      body.leases.map((l) => l.lease_uuid),
      leases,
    );
    const one = body.leases[0]!;
    assert.equal(one.instances.length, 1);
    assert.equal(one.instances[0]!.service, "app");
    assert.equal(one.instances[0]!.memory_limit_bytes, 512 * 1024 * 1024);
    assert.equal("history" in one, false);
    const parsed = usagePageSchema.safeParse(body);
    assert.equal(parsed.success, true, JSON.stringify(parsed.error?.issues));
  });

  it("answers the same current figures as the per-lease read of the same pass", async () => {
    // Both reads come from memory; they agree whenever no pass ran in between.
    await until(async () => {
      const page = (await c.get("/usage")).json as { leases: { lease_uuid: string; instances: unknown[] }[] };
      const single = (await c.get(`/usage/${leases[2]}`)).json as { instances: unknown[] };
      const row = page.leases.find((l) => l.lease_uuid === leases[2]);
      return JSON.stringify(row?.instances) === JSON.stringify(single.instances);
    }, "page and per-lease read agree");
  });

  it("walks keyset pages with continue, each full page naming its last lease", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (; pages < 10; pages++) {
      const res = await c.get(`/usage?limit=2${cursor ? `&continue=${cursor}` : ""}`);
      assert.equal(res.status, 200, res.text);
      const body = res.json as Page;
      assert.ok(body.leases.length <= 2);
      seen.push(...body.leases.map((l) => l.lease_uuid));
      if (body.continue === undefined) break;
      assert.equal(body.continue, body.leases.at(-1)?.lease_uuid);
      cursor = body.continue;
    }
    assert.deepEqual(seen, leases);
    assert.equal(pages, 2, "5 leases in pages of 2: two full pages and a last one");
    const tail = (await c.get(`/usage?continue=${leases[3]}`)).json as Page;
    assert.deepEqual(
      tail.leases.map((l) => l.lease_uuid),
      [leases[4]],
      "continue without limit",
    );
    assert.equal((await c.get("/usage?limit=6000")).status, 200, "a limit above 5000 is lowered");
  });

  it("refuses bad parameters with 400 and an unsigned request with 401", async () => {
    for (const q of ["limit=0", "limit=-1", "limit=abc", "continue=nope", "limit=2&continue=NOPE"]) {
      const res = await c.get(`/usage?${q}`);
      assert.equal(res.status, 400, q);
      assert.equal(typeof (res.json as { error?: unknown }).error, "string", q);
    }
    assert.equal((await c.get("/usage", { tamper: "missing" })).status, 401);
  });

  it("forgets a deprovisioned lease at the next pass", async () => {
    const gone = leases[0]!;
    assert.equal((await c.post("/deprovision", { lease_uuid: gone })).status, 200);
    await until(
      async () => !((await c.get("/usage")).json as Page).leases.some((l) => l.lease_uuid === gone),
      "the deprovisioned lease is no longer listed",
    );
  });

  it("a backend that cannot sample answers 501 unsupported", async () => {
    const res = await signedClient(noSampling.url, SECRET).get("/usage");
    assert.equal(res.status, 501, res.text);
    assert.equal((res.json as { code?: string }).code, "unsupported");
  });
});
