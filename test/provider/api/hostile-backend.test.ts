import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { Registry } from "prom-client";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { backendConfigFor } from "../backend-client/backend-config.ts";
import { type FakeBackend, startFakeBackend } from "../backend-client/fake-backend.ts";
import { Harness } from "./harness.ts";
import { call } from "./tenant-client.ts";

/**
 * A hostile backend behind the tenant API (issue #30, item 7): the lease's owner, a real
 * HTTP server, answers 200 with a body off the contract. Every route that relays its
 * answer says 502 in the documented envelope, with none of the backend's text, and counts
 * it in fred_backend_malformed_error_body_total; never a 404 "not provisioned" for a lease
 * that is placed.
 */
const SECRET = "hostile-backend-test-secret-0123456789";
// The harness pins backend "one" to this storage identity.
const SID = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const LEASE = "0190f3a2-7c1e-7000-8000-0000000000f1";
const LEAK = "SECRET-BACKEND-TEXT /var/lib/backend.db";

let fake: FakeBackend;
let client: BackendClient;
let h: Harness;
const registry = new Registry();

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
  client = await BackendClient.create({
    backend: backendConfigFor(fake.url, SECRET, { name: "one" }),
    secret: SECRET,
    storageId: SID,
  });
  h = await new Harness().start({ clients: new Map([["one", client]]), registry });
  h.lease(LEASE);
  h.store.adoptPlacement(LEASE, "one", h.clock.now());
});

after(async () => {
  await h.close();
  await client.close();
  await fake.close();
});

beforeEach(() => fake.script.clear());

async function counted(): Promise<number> {
  const m = await registry.getSingleMetric("fred_backend_malformed_error_body_total")?.get();
  return m?.values[0]?.value ?? 0;
}

/** The tenant routes that relay the owner's answer, and the backend read behind each. */
const ROUTES = [
  ["connection", "info"],
  ["provision", "provision-info"],
  ["logs", "logs"],
  ["releases", "releases"],
] as const;

const HOSTILE: [string, string][] = [
  ["not JSON", `<html>${LEAK}</html>`],
  ["JSON of the wrong type", JSON.stringify([LEAK])],
  ["a truncated body", `{"error":"${LEAK}`],
];

describe("a backend 200 with an unreadable body", () => {
  for (const [route, key] of ROUTES) {
    for (const [what, body] of HOSTILE) {
      it(`GET ${route}: ${what} is a curated 502, counted`, async () => {
        fake.script.set(key, [{ status: 200, body }]);
        const before = await counted();
        const a = await call(h.url, `/v1/leases/${LEASE}/${route}`, h.token(LEASE));
        assert.equal(a.status, 502, a.text);
        assert.deepEqual(a.body, { error: "the provider backend returned an invalid response", code: 502 });
        assert.doesNotMatch(a.text, /SECRET|backend\.db|html/);
        assert.equal(await counted(), before + 1);
      });
    }
  }

  it("GET connection: a well-formed JSON object whose fields are off the contract is a 502", async () => {
    fake.script.set("info", [
      { status: 200, body: { host: LEAK, ports: { "80/tcp": { host_port: LEAK } } } },
    ]);
    const a = await call(h.url, `/v1/leases/${LEASE}/connection`, h.token(LEASE));
    assert.equal(a.status, 502, a.text);
    assert.doesNotMatch(a.text, /SECRET/);
  });

  it("GET releases: a release whose fields are off the contract is a 502", async () => {
    fake.script.set("releases", [{ status: 200, body: [{ status: 7, manifest: LEAK }] }]);
    const a = await call(h.url, `/v1/leases/${LEASE}/releases`, h.token(LEASE));
    assert.equal(a.status, 502, a.text);
    assert.doesNotMatch(a.text, /SECRET/);
  });

  it("an off-contract status (418 with text) is a curated 502, counted; a 5xx stays 500", async () => {
    fake.script.set("logs", [{ status: 418, body: { error: LEAK } }]);
    const before = await counted();
    const a = await call(h.url, `/v1/leases/${LEASE}/logs`, h.token(LEASE));
    assert.equal(a.status, 502, a.text);
    assert.doesNotMatch(a.text, /SECRET/);
    assert.equal(await counted(), before + 1);
    fake.script.set("logs", [{ status: 500, body: { error: LEAK } }]);
    const b = await call(h.url, `/v1/leases/${LEASE}/logs`, h.token(LEASE));
    assert.equal(b.status, 500, b.text);
    assert.doesNotMatch(b.text, /SECRET/);
    assert.equal(await counted(), before + 1);
  });

  it("a backend's real 404 is still 404, and not counted", async () => {
    fake.script.set("info", [{ status: 404, body: { error: LEAK } }]);
    const before = await counted();
    const a = await call(h.url, `/v1/leases/${LEASE}/connection`, h.token(LEASE));
    assert.equal(a.status, 404, a.text);
    assert.doesNotMatch(a.text, /SECRET/);
    assert.equal(await counted(), before);
  });
});
