import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { type BackendClient, createBackendClients } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { retainedFields } from "../../../src/provider/retention/index.ts";
import { chainLease, Harness } from "../api/harness.ts";
import { type FakeBackend, startFakeBackend } from "../backend-client/fake-backend.ts";
import { baseConfig, yamlOf } from "../config/fixtures.ts";

/**
 * GET status and GET provision of retained data, over real HTTP with a real placement store
 * and a real backend client against a contract-speaking HTTP backend (scripted provision
 * records). The retained fields come through shaped and bounded; when the chain does not
 * know the lease, status answers from the retained record (LEASE_STATE_UNSPECIFIED) to its
 * own tenant only, and 404 to anyone else.
 */
const SID = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const SECRET = "retained-status-secret-0123456789abcdef";
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000a1";
const OP = "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";
const RETAINED_FIELDS = {
  items: [{ service_name: "app", sku: "0190f3a2-7c1e-7000-8000-00000000000a", quantity: 1 }],
  restore_hint: "open a lease with the same items and restore",
  partition: "team-a",
  retained_until: "2027-03-01T00:00:00Z",
};

let fake: FakeBackend;
let clients: Map<string, BackendClient>;
let h: Harness;

const record = (tenant: string) => ({
  lease_uuid: LEASE,
  tenant,
  status: "retained",
  created_at: "2026-01-01T00:00:00Z",
  ...RETAINED_FIELDS,
});

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
  const c = baseConfig();
  c.backends = [{ name: "one", url: fake.url, hmac_secret: SECRET, default: true }];
  clients = await createBackendClients(
    parseProviderConfig(yamlOf(c)),
    new Map([["one", SID]]),
    new ManualClock(),
  );
});

after(async () => {
  await h?.close();
  for (const c of clients.values()) await c.close();
  await fake.close();
});

beforeEach(async () => {
  await h?.close();
  fake.script.clear();
  h = new Harness();
  await h.start({ clients });
  h.store.recordAttempt({
    leaseUuid: LEASE,
    backend: "one",
    operationId: OP,
    kind: "provision",
    createdAt: 0,
  });
  h.store.settleOperation(LEASE, OP, "success", 1);
  h.store.retained.mark(LEASE, "one", SID, 2);
});

async function get(route: string, key = h.key): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h.url}/v1/leases/${LEASE}/${route}`, {
    headers: { authorization: `Bearer ${h.token(LEASE, key)}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("GET status / provision of retained data", () => {
  it("status of a closed lease carries provision_status retained and the retained fields", async () => {
    h.leases.set(LEASE, chainLease(LEASE, h.tenant, "LEASE_STATE_CLOSED"));
    fake.script.set("provision-info", [{ status: 200, body: record(h.tenant) }]);
    const r = await get("status");
    assert.equal(r.status, 200);
    assert.equal(r.body.state, "LEASE_STATE_CLOSED");
    assert.equal(r.body.provision_status, "retained");
    for (const [k, v] of Object.entries(RETAINED_FIELDS)) assert.deepEqual(r.body[k], v, k);
    assert.equal(r.body.created_at, undefined, "operator-side fields are dropped");
  });

  it("provision carries them too", async () => {
    h.leases.set(LEASE, chainLease(LEASE, h.tenant, "LEASE_STATE_EXPIRED"));
    fake.script.set("provision-info", [{ status: 200, body: record(h.tenant) }]);
    const r = await get("provision");
    assert.equal(r.status, 200);
    assert.equal(r.body.status, "retained");
    assert.deepEqual(r.body.items, RETAINED_FIELDS.items);
    assert.equal(r.body.partition, "team-a");
    assert.equal(r.body.tenant, h.tenant);
  });

  it("when the chain does not know the lease, the retained record answers its tenant with LEASE_STATE_UNSPECIFIED", async () => {
    fake.script.set("provision-info", [{ status: 200, body: record(h.tenant) }]);
    const r = await get("status");
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.state, "LEASE_STATE_UNSPECIFIED");
    assert.equal(r.body.provision_status, "retained");
    assert.equal(r.body.restore_hint, RETAINED_FIELDS.restore_hint);
  });

  it("…and 404 to another tenant, or when the record is not retained or absent", async () => {
    fake.script.set("provision-info", [{ status: 200, body: record(h.tenant) }]);
    const cross = await get("status", h.other);
    assert.equal(cross.status, 404);
    fake.script.set("provision-info", [{ status: 200, body: { ...record(h.tenant), status: "failed" } }]);
    assert.equal((await get("status")).status, 404);
    fake.script.set("provision-info", [{ status: 404, body: { error: "not found" } }]);
    assert.equal((await get("status")).status, 404);
    assert.deepEqual(cross.body, { error: "lease not found", code: 404 });
  });
});

describe("retained fields: shaped and bounded", () => {
  it("drops fields in another shape instead of relaying them", () => {
    assert.deepEqual(
      retainedFields({
        items: [{ sku: "s", quantity: 0 }],
        restore_hint: 7,
        partition: "",
        retained_until: "tomorrow",
      }),
      {},
    );
    assert.deepEqual(
      retainedFields({ items: [{ sku: "s", quantity: 2, extra: "x" }], restore_hint: "a\u0000b\nc" }),
      { items: [{ service_name: "", sku: "s", quantity: 2 }], restore_hint: "a b c" },
    );
    assert.equal(retainedFields({ partition: "p".repeat(5000) }).partition?.length, 512);
  });
});
