import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import { systemClock } from "../../../src/core/clock.ts";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { registerWorkloadsRoute } from "../../../src/provider/http/workloads.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { backendConfigFor } from "../backend-client/backend-config.ts";
import { type FakeBackend, startFakeBackend } from "../backend-client/fake-backend.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";

/**
 * `GET /workloads` on a real listener, with the real placement store and providerd's
 * backend clients against two backends on real ports (scripted answers, the contract's
 * shapes). The answer is the reference's shape; a backend that cannot answer is a warning.
 */
const SECRET = "backend-one-secret-0123456789abcdef";
const SID = ["5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b", "6d1f3a2b-4c5e-4f70-9b0c-1d2e3f4a5b6c"];
const STACK = "0190f3a2-7c1e-7000-8000-0000000000a1";
const SINGLE = "0190f3a2-7c1e-7000-8000-0000000000a2";
const ON_TWO = "0190f3a2-7c1e-7000-8000-0000000000a3";
const UNKNOWN = "0190f3a2-7c1e-7000-8000-0000000000a4";
const CREATED = "2026-12-01T10:00:00.000Z";

let dir: string;
let fakes: FakeBackend[];
let clients: BackendClient[];
let store: PlacementStore;
let app: FastifyInstance;
let url: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "fred-workloads-"));
  fakes = [
    await startFakeBackend({ storageId: SID[0]!, secret: SECRET }),
    await startFakeBackend({ storageId: SID[1]!, secret: SECRET }),
  ];
  clients = await Promise.all(
    ["one", "two"].map((name, i) =>
      BackendClient.create({
        backend: backendConfigFor(fakes[i]!.url, SECRET, { name }),
        secret: SECRET,
        storageId: SID[i],
      }),
    ),
  );
  store = PlacementStore.create(
    join(dir, "placements.db"),
    PROVIDER_UUID,
    ["one", "two"].map((name, i) => ({
      name,
      storageId: SID[i]!,
      baseline: { provisions: 0, retentions: 0 },
    })),
    Date.now(),
  );
  // ON_TWO is confirmed on "two": only "two" is asked about it.
  const op = crypto.randomUUID();
  store.placements.recordAttempt({
    leaseUuid: ON_TWO,
    backend: "two",
    operationId: op,
    kind: "provision",
    createdAt: 1,
  });
  store.placements.settleOperation(ON_TWO, op, "success", 2);
  app = Fastify({ logger: false });
  registerWorkloadsRoute(app, {
    config: parseProviderConfig(yamlOf(baseConfig())),
    store: store.placements,
    clock: systemClock,
    clients: new Map([
      ["one", clients[0]!],
      ["two", clients[1]!],
    ]),
  });
  url = await app.listen({ host: "127.0.0.1", port: 0 });
});

after(async () => {
  await app.close();
  store.close();
  for (const c of clients) await c.close();
  for (const f of fakes) await f.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  for (const f of fakes) {
    f.script.clear();
    f.requests.length = 0;
  }
});

/** What backend "one" reports: a two-service stack and a single-item lease (tenant fields included). */
const ONE_ROWS = {
  provisions: [
    {
      lease_uuid: STACK,
      tenant: "manifest1tenantaddressxxxxxxxxxxxxxxxxxxxxx",
      partition: "customer-7",
      status: "ready",
      created_at: CREATED,
      fail_count: 0,
      items: [
        { service_name: "web", sku: "sku-small", quantity: 2 },
        { service_name: "db", sku: "sku-large", quantity: 1 },
      ],
      service_images: { web: "ghcr.io/acme/web:1.4.2", db: "registry.local:5000/postgres@sha256:abc" },
    },
    {
      lease_uuid: SINGLE,
      tenant: "manifest1tenantaddressxxxxxxxxxxxxxxxxxxxxx",
      status: "failed",
      created_at: CREATED,
      items: [{ sku: "sku-small", quantity: 1 }],
      image: "docker.io/library/nginx:1.27",
      sku: "sku-small",
      quantity: 1,
    },
  ],
};

const EXPECTED_ONE = {
  [STACK]: {
    status: "ready",
    created_at: CREATED,
    backend_name: "one",
    items: [
      { service_name: "web", sku: "sku-small", image: "ghcr.io/acme/web", count: 2 },
      { service_name: "db", sku: "sku-large", image: "registry.local:5000/postgres", count: 1 },
    ],
  },
  [SINGLE]: {
    status: "failed",
    created_at: CREATED,
    backend_name: "one",
    items: [{ sku: "sku-small", image: "docker.io/library/nginx", count: 1 }],
  },
};

const get = async (query: string) => {
  const res = await fetch(`${url}/workloads${query}`);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
};
const q = (...uuids: string[]) => `?${uuids.map((u) => `lease_uuid=${u}`).join("&")}`;

describe("GET /workloads: the reference's shape", () => {
  it("the leases a backend reports, keyed by UUID; unknown ones absent; warnings an empty array", async () => {
    fakes[0]!.script.set("provisions", [{ status: 200, body: ONE_ROWS }]);
    fakes[1]!.script.set("provisions", [
      { status: 200, body: { provisions: [] } },
      { status: 200, body: { provisions: [] } },
    ]);
    const r = await get(q(STACK, SINGLE, UNKNOWN, STACK));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { workloads: EXPECTED_ONE, warnings: [] });
    assert.doesNotMatch(r.text, /manifest1|customer-7|1\.4\.2|sha256/, "no tenant, partition or image tag");
    // The confirmed lease of "two" was asked of "two" only.
    const asked = fakes.map((f) =>
      f.requests.map((x) => new URL(x.url, "http://x").searchParams.getAll("lease_uuid")),
    );
    assert.ok(asked[0]!.every((l) => !l.includes(ON_TWO)));
  });

  it("two backends, one down: a warnings entry for it, the other's leases present", async () => {
    fakes[0]!.script.set("provisions", [{ status: 200, body: ONE_ROWS }]);
    await fakes[1]!.close();
    const r = await get(q(STACK, SINGLE, ON_TWO));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { workloads: EXPECTED_ONE, warnings: ['backend "two" unavailable'] });
  });
});

describe("GET /workloads: bad input is a 400 envelope and asks no backend", () => {
  const many = Array.from(
    { length: 101 },
    (_, i) => `0190f3a2-7c1e-7000-8000-${String(i).padStart(12, "0")}`,
  );
  const cases: [string, string][] = [
    ["", "lease_uuid query parameter required"],
    ["?other=1", "lease_uuid query parameter required"],
    [q(...many), "too many lease_uuid values (max 100)"],
    [q("nope"), "invalid lease_uuid"],
    ["?lease_uuid=", "invalid lease_uuid"],
    [q(STACK.toUpperCase()), "invalid lease_uuid"],
    [q(STACK, "nope"), "invalid lease_uuid"],
  ];
  for (const [query, error] of cases) {
    it(`${query.slice(0, 60) || "(no query)"} → 400 ${JSON.stringify(error)}`, async () => {
      const r = await get(query);
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, { error, code: 400 });
      assert.equal(fakes[0]!.requests.length, 0);
    });
  }

  it("exactly 100 UUIDs are accepted", async () => {
    fakes[0]!.script.set("provisions", [{ status: 200, body: { provisions: [] } }]);
    const r = await get(q(...many.slice(0, 100)));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.workloads, {});
    assert.ok(Array.isArray(r.body.warnings));
  });
});
