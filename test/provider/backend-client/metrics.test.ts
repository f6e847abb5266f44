import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Registry } from "prom-client";
import { isFredError } from "../../../src/core/errors.ts";
import { BackendClient, createBackendCallMetrics } from "../../../src/provider/backend-client/index.ts";
import { sample } from "../../support/metrics.ts";
import { PROMTOOL_SKIP, promtoolMetricsProblems } from "../../support/promtool.ts";
import { backendConfigFor } from "./backend-config.ts";
import { type FakeBackend, startFakeBackend } from "./fake-backend.ts";

/**
 * The backend-client families against a scripted backend over real HTTP: each call is
 * counted by operation and status, an undecodable answer as malformed, a capacity refusal
 * of a provision as insufficient resources. (The providerd e2e covers the rest of them.)
 */
const SECRET = "backend-client-metrics-secret-0123456789";
const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";

let fake: FakeBackend;
let client: BackendClient;
const registry = new Registry();

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
  client = await BackendClient.create({
    backend: backendConfigFor(fake.url, SECRET, { name: "fake", skus: [SKU] }),
    secret: SECRET,
    storageId: SID,
    observe: createBackendCallMetrics(registry),
  });
});
after(async () => {
  await client.close();
  await fake.close();
});

async function exposition(): Promise<string> {
  const text = await registry.metrics();
  if (!PROMTOOL_SKIP) assert.equal(promtoolMetricsProblems(text), "");
  return text;
}

const provision = () =>
  client.provision({
    leaseUuid: LEASE,
    tenant: "manifest1tenant",
    providerUuid: "0190f3a2-7c1e-7000-8000-0000000000aa",
    items: [{ sku: SKU, quantity: 1 }],
    callbackUrl: "http://127.0.0.1:8080/callbacks/provision",
    lifecycleCallbackUrl: "http://127.0.0.1:8080/callbacks/provision",
  });

describe("backend client metrics", () => {
  it("an answer off the contract's shape counts as malformed, and the call by its status", async () => {
    fake.script.set("stats", [{ status: 200, body: { total_cpu_cores: "eight" } }]);
    await assert.rejects(client.stats(), (err) => isFredError(err, "ERR_BACKEND_MALFORMED"));
    const text = await exposition();
    assert.equal(sample(text, "fred_backend_malformed_responses_total", { backend: "fake" }), 1);
    assert.equal(
      sample(text, "fred_backend_requests_total", { backend: "fake", operation: "stats", status: "200" }),
      1,
    );
    assert.equal(sample(text, "fred_backend_request_duration_seconds_count", { operation: "stats" }), 1);
  });

  it("a provision refused for capacity counts as insufficient resources; an off-contract refusal as malformed", async () => {
    fake.script.set("provision", [
      { status: 503, body: { error: "no room", code: "insufficient_resources" } },
      { status: 409, body: "<html>busy</html>" },
    ]);
    assert.equal((await provision()).kind, "refused");
    assert.equal((await provision()).kind, "ambiguous");
    const text = await exposition();
    assert.equal(sample(text, "fred_backend_insufficient_resources_total", { backend: "fake" }), 1);
    assert.equal(sample(text, "fred_backend_malformed_responses_total", { backend: "fake" }), 2);
    assert.equal(sample(text, "fred_backend_requests_total", { operation: "provision", status: "503" }), 1);
    assert.equal(sample(text, "fred_backend_requests_total", { operation: "provision", status: "409" }), 1);
  });
});
