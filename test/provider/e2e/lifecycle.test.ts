import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { PayloadStore, PlacementStore } from "../../../src/provider/store/index.ts";
import { until } from "../../support/index.ts";
import { PROMTOOL_SKIP, promtoolMetricsProblems } from "../../support/promtool.ts";
import { mockSkus, Stack, sha256 } from "./stack.ts";

/**
 * The lease lifecycle through real processes: a devnet, two mock backends that both
 * serve docker-small (mock-1 is the default and also serves docker-medium; nobody
 * serves docker-large), and providerd.
 */
const stack = new Stack();

before(async () => {
  await stack.start(
    (s) => {
      const served = mockSkus(s.sku("docker-small"), s.sku("docker-medium"));
      return [{ MOCK_BACKEND_SKUS: served }, { MOCK_BACKEND_SKUS: served }];
    },
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-small")] }];
      s.extraConfig = { billing_only_skus: [s.sku("billing-only")] };
    },
  );
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

function placements(): PlacementStore {
  return PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
}

describe("providerd lifecycle (devnet + providerd + mock backends)", () => {
  it("provisions a new lease once, acknowledges it, and deprovisions it when closed", async () => {
    const [lease] = await stack.createLeases(1, "docker-medium");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const w = await stack.workloads([lease!]);
    assert.deepEqual(
      w.map((x) => [x.backend, x.status]),
      [["mock-1", "ready"]],
    );
    const store = placements();
    try {
      assert.equal(store.placements.placement(lease!)?.owner, "mock-1");
      assert.equal(store.placements.attemptFor(lease!), undefined);
    } finally {
      store.close();
    }

    const [closed] = await stack.tenant.closeLeases([lease!], "done");
    assert.equal(closed!.status, "closed");
    // The backend tears it down and reports `deprovisioned` on the lifecycle URL: retired.
    await until(() => {
      const s = placements();
      try {
        return s.placements.placement(lease!) === undefined;
      } finally {
        s.close();
      }
    }, "placement retired after deprovision");
    assert.deepEqual(await stack.workloads([lease!]), []);
  });

  it("a lease with meta_hash waits for its payload, then becomes ACTIVE with it", async () => {
    const manifest = Buffer.from(
      JSON.stringify({ image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } }),
    );
    const [lease] = await stack.createLeases(1, "docker-medium", sha256(manifest));
    // Nothing can be provisioned yet: no backend has it and no attempt exists.
    await until(async () => (await fetch(`${stack.api}/metrics`)).ok, "metrics");
    await until(async () => {
      const text = await (await fetch(`${stack.api}/metrics`)).text();
      return /fred_leases\{state="awaiting_payload"\} [1-9]/.test(text);
    }, "lease counted as awaiting its payload");
    assert.equal(await stack.leaseState(lease!), "LEASE_STATE_PENDING");
    assert.deepEqual(await stack.workloads([lease!]), []);

    const payloads = PayloadStore.open(stack.payloadPath);
    try {
      assert.equal(await payloads.put(lease!, manifest, Date.now()), "stored");
    } finally {
      payloads.close();
    }
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    assert.equal((await stack.workloads([lease!]))[0]?.status, "ready");
  });

  it("once the lease runs, the payload store keeps only the masked registry password", async () => {
    const secret = "e2e-registry-secret";
    const manifest = Buffer.from(
      JSON.stringify({
        image: "docker.io/library/nginx:1.27",
        credentials: { host: "docker.io", username: "bot", password: secret },
      }),
    );
    const [lease] = await stack.createLeases(1, "docker-medium", sha256(manifest));
    {
      using payloads = PayloadStore.open(stack.payloadPath);
      assert.equal(await payloads.put(lease!, manifest, Date.now()), "stored");
      await payloads.durable();
    }
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    const stored = await until(async () => {
      using payloads = PayloadStore.open(stack.payloadPath);
      const got = await payloads.get(lease!);
      return got !== undefined && (await payloads.holdingSecrets()).length === 0 ? got : undefined;
    }, "the stored payload masked");
    assert.doesNotMatch(stored.payload.toString(), new RegExp(secret));
    assert.match(stored.payload.toString(), /"password":"\*{8}"/);
    assert.equal(
      stored.uploadSha256,
      Buffer.from(sha256(manifest)).toString("hex"),
      "still the payload of the meta_hash",
    );
  });

  it("two backends serving the same SKU share the load", async () => {
    const leases = await stack.createLeases(6, "docker-small");
    await stack.waitState(leases, "LEASE_STATE_ACTIVE");
    const w = await stack.workloads(leases);
    assert.equal(w.length, 6);
    const perBackend = new Map<string, number>();
    for (const x of w) perBackend.set(x.backend, (perBackend.get(x.backend) ?? 0) + 1);
    assert.equal(perBackend.size, 2, `all on one backend: ${JSON.stringify([...perBackend])}`);
  });

  it("a billing-only lease is acknowledged and never provisioned", async () => {
    const [lease] = await stack.createLeases(1, "billing-only");
    await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    assert.deepEqual(await stack.workloads([lease!]), []);
    const store = placements();
    try {
      assert.equal(store.placements.placement(lease!), undefined);
      assert.equal(store.placements.attemptFor(lease!), undefined);
    } finally {
      store.close();
    }
  });

  it("a definite refusal from the backend rejects the lease with a curated reason", async () => {
    const [lease] = await stack.createLeases(1, "docker-large");
    await stack.waitState([lease!], "LEASE_STATE_REJECTED");
    const onChain = await stack.tenant.getLease(lease!);
    assert.equal(onChain?.rejectionReason, "invalid SKU");
    const store = placements();
    try {
      assert.equal(store.placements.attemptFor(lease!), undefined, "a refused attempt is cleared");
    } finally {
      store.close();
    }
  });

  it("serves /health, /readyz and /metrics with the documented shapes", async () => {
    const health = await fetch(`${stack.api}/health`);
    assert.equal(health.status, 200);
    const body = (await health.json()) as {
      status: string;
      provider_uuid: string;
      checks: Record<string, { status: string }>;
      stats: { in_flight_provisions: number };
      role: string;
      instance: string;
      leader: string | null;
    };
    assert.equal(body.provider_uuid, stack.keys.provider_uuid);
    // One providerd on SQLite leads; its id is new at every start.
    assert.equal(body.role, "leader");
    assert.match(body.instance, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(body.leader, body.instance);
    assert.deepEqual(Object.keys(body.checks), [
      "backend:mock-1",
      "backend:mock-2",
      "chain",
      "payload_store",
      "placement_inventory",
      "placement_store",
    ]);
    assert.equal(body.status, "healthy");
    assert.equal(typeof body.stats.in_flight_provisions, "number");
    const ready = await fetch(`${stack.api}/readyz`);
    assert.equal(ready.status, 200);
    const readyBody = (await ready.json()) as { role: string; instance: string; leader: string };
    assert.deepEqual(
      [readyBody.role, readyBody.instance, readyBody.leader],
      ["leader", body.instance, body.instance],
    );
    const metrics = await (await fetch(`${stack.api}/metrics`)).text();
    assert.match(metrics, /^fred_leader 1$/m);
    assert.match(metrics, /^fred_leader_generation 1$/m);
    for (const name of [
      "fred_leases",
      "fred_provision_latency_seconds_bucket",
      "fred_callbacks_total",
      "fred_backend_healthy",
      "fred_chain_last_block_height",
      "fred_chain_lag_seconds",
      "fred_queue_depth",
    ]) {
      assert.match(metrics, new RegExp(`^${name}`, "m"), name);
    }
  });

  it("every daemon's /metrics passes promtool check metrics", { skip: PROMTOOL_SKIP }, async () => {
    const sources = [`${stack.api}/metrics`, ...stack.mocks.map((m) => `${m.ready.url}/metrics`)];
    for (const url of sources) {
      const text = await (await fetch(url)).text();
      assert.match(text, /^# TYPE /m, url);
      assert.equal(promtoolMetricsProblems(text), "", url);
    }
  });

  it("/workloads refuses bad input with 400 and the JSON envelope", async () => {
    for (const q of ["", "lease_uuid=nope", `lease_uuid=${"0190F3A2-7C1E-7000-8000-000000000001"}`]) {
      const res = await fetch(`${stack.api}/workloads?${q}`);
      assert.equal(res.status, 400, q);
      const body = (await res.json()) as { error: string; code: number };
      assert.deepEqual(body, {
        error: q === "" ? "lease_uuid query parameter required" : "invalid lease_uuid",
        code: 400,
      });
    }
    const many = Array.from(
      { length: 101 },
      (_, i) => `lease_uuid=0190f3a2-7c1e-7000-8000-${String(i).padStart(12, "0")}`,
    );
    assert.equal((await fetch(`${stack.api}/workloads?${many.join("&")}`)).status, 400);
  });
});
