import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { until } from "../../support/index.ts";
import { sample, scrape } from "../../support/metrics.ts";
import { call, TenantKey } from "../api/tenant-client.ts";
import { WsClient } from "../api/ws-client.ts";
import { mockSkus, Stack, sha256 } from "./stack.ts";

/**
 * providerd's metric families (issue 35 item 2) through real processes: a devnet, five
 * mock backends and providerd. Each test does what moves a family, then scrapes
 * /metrics (promtool-checked on every scrape) and finds the series moved.
 *
 * - mock-1 takes docker-small/medium leases at once;
 * - mock-2 serves docker-large with less CPU than one lease needs (capacity refusals);
 * - mock-3 serves docker-large and takes 30 minutes (callback timeouts, in-flight);
 * - mock-4 is fenced, mock-5 draining.
 * The last test stops mock-2 and mock-3 (routing fallback, open breakers).
 */
const stack = new Stack();
const SID4 = "8f3b5c4d-6e7a-4b92-9dce-3f4a5b6c7d8e";
const SID5 = "9a4c6d5e-7f8b-4ca3-8edf-4a5b6c7d8e9f";
const SECRET4 = "e2e-mock-four-secret-0123456789abcdef";
const SECRET5 = "e2e-mock-five-secret-0123456789abcdef";
let tenant1: TenantKey;
let tenant2: TenantKey;

const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small"), s.sku("docker-medium")) },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-large")),
        MOCK_BACKEND_CAPACITY: JSON.stringify({ cpu_cores: 0.25, memory_mb: 256, disk_mb: 512 }),
      },
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-large")), MOCK_BACKEND_DELAY: "30m" },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")),
        MOCK_BACKEND_STORAGE_ID: SID4,
        MOCK_BACKEND_CALLBACK_SECRET: SECRET4,
      },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")),
        MOCK_BACKEND_STORAGE_ID: SID5,
        MOCK_BACKEND_CALLBACK_SECRET: SECRET5,
      },
    ],
    (s) => {
      const small = [s.sku("docker-small"), s.sku("docker-medium")];
      s.backendOverrides = [
        { skus: small },
        { skus: [s.sku("docker-large")] },
        { skus: [s.sku("docker-large")] },
        { skus: [s.sku("docker-small")], hmacSecret: SECRET4 },
        { skus: [s.sku("docker-small")], draining: true, hmacSecret: SECRET5 },
      ];
      s.extraConfig = {
        provision_callback_timeout: "4s",
        // Requests carrying X-Forwarded-For from loopback are keyed on that address: one
        // fake client can spend its per-IP budget without starving the test's own calls.
        trusted_proxies: ["127.0.0.1/32"],
        rate_limit_rps: 50,
        rate_limit_burst: 100,
        tenant_rate_limit_rps: 5,
        tenant_rate_limit_burst: 20,
      };
    },
  );
  // Fenced once pinned: placement init refuses to run with a fenced backend.
  stack.backendOverrides[3]!.fenced = true;
  stack.writeConfig();
  tenant1 = new TenantKey(stack.account("tenant1").private_key_hex);
  tenant2 = new TenantKey(stack.account("tenant2").private_key_hex);
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

const metrics = () => scrape(`${stack.api}/metrics`);

/** Polls /metrics until `ok` holds for it; returns that scrape. */
async function scrapeUntil(ok: (text: string) => boolean, what: string): Promise<string> {
  let last = "";
  await until(
    async () => {
      last = await metrics();
      return ok(last);
    },
    what,
    { timeoutMs: 60_000, intervalMs: 250, context: () => stack.providerd?.logTail() ?? "" },
  );
  return last;
}

const upload = (lease: string, token: string | undefined, body: Uint8Array) =>
  call(stack.api, `/v1/leases/${lease}/data`, token, {
    method: "POST",
    body,
    headers: { "content-type": "application/octet-stream" },
  });

describe("providerd metric families (devnet + mock backends + providerd)", () => {
  let manifestLease = "";

  it("fenced, draining and breaker gauges show every backend", async () => {
    const text = await metrics();
    for (const [backend, fenced, draining] of [
      ["mock-1", 0, 0],
      ["mock-2", 0, 0],
      ["mock-3", 0, 0],
      ["mock-4", 1, 0],
      ["mock-5", 0, 1],
    ] as const) {
      assert.equal(sample(text, "fred_backend_fenced", { backend }), fenced, backend);
      assert.equal(sample(text, "fred_backend_draining", { backend }), draining, backend);
      assert.equal(sample(text, "fred_backend_circuit_breaker_state", { backend }), 0, backend);
    }
  });

  it("tenant API answers are counted by route template, unmatched paths as `unmatched`", async () => {
    assert.equal((await call(stack.api, "/v1/provider", undefined)).status, 200);
    assert.equal((await call(stack.api, "/v1/leases/not-a-uuid/status", undefined)).status, 400);
    assert.equal((await call(stack.api, `/v1/nothing-here/${randomUUID()}`, undefined)).status, 404);
    const text = await metrics();
    const route = "/v1/leases/:lease_uuid/status";
    assert.ok(
      sample(text, "fred_api_requests_total", { method: "GET", route: "/v1/provider", status: "200" })! >= 1,
    );
    assert.ok(sample(text, "fred_api_requests_total", { method: "GET", route, status: "400" })! >= 1);
    assert.ok(sample(text, "fred_api_requests_total", { route: "unmatched", status: "404" })! >= 1);
    assert.ok(sample(text, "fred_api_request_duration_seconds_count", { method: "GET", route })! >= 1);
    // Operational routes are not tenant API answers, and no URL ever becomes a label.
    assert.equal(sample(text, "fred_api_requests_total", { route: "/metrics" }), undefined);
    assert.doesNotMatch(text, /fred_api_requests_total\{[^}]*nothing-here/);
  });

  it("429s are counted by the limiter that refused: the per-IP bucket and the tenant's", async () => {
    const xff = { "x-forwarded-for": "10.77.0.1" };
    const ip = await Promise.all(
      Array.from({ length: 160 }, () =>
        fetch(`${stack.api}/v1/provider`, { headers: xff }).then((r) => r.status),
      ),
    );
    assert.ok(ip.includes(429), "the per-IP budget (burst 100) ran out");
    const lease = randomUUID();
    const tenant = await Promise.all(
      Array.from({ length: 40 }, () =>
        call(stack.api, `/v1/leases/${lease}/status`, tenant2.access(lease), {
          headers: { "x-forwarded-for": "10.77.0.2" },
        }).then((a) => a.status),
      ),
    );
    assert.ok(tenant.includes(429), "the tenant budget (burst 20) ran out");
    const text = await metrics();
    assert.equal(
      sample(text, "fred_api_rate_limited_total", { limiter: "ip" }),
      ip.filter((s) => s === 429).length,
    );
    assert.equal(
      sample(text, "fred_api_rate_limited_total", { limiter: "tenant" }),
      tenant.filter((s) => s === 429).length,
    );
  });

  it("uploads by outcome, stored sizes, payloads held; the lease's calls and txs", async () => {
    const [lease] = await stack.createLeases(1, "docker-small", sha256(MANIFEST));
    assert.ok(lease !== undefined);
    manifestLease = lease;
    const token = () => tenant1.payload(lease, hex(sha256(MANIFEST)));
    assert.equal((await upload(lease, undefined, MANIFEST)).status, 401);
    assert.equal((await upload(lease, token(), Buffer.from("not the manifest"))).status, 400);
    assert.equal((await upload(lease, token(), Buffer.alloc(1_048_577, 1))).status, 400);
    assert.equal((await upload(lease, token(), MANIFEST)).status, 202);
    assert.equal((await upload(lease, token(), MANIFEST)).status, 409);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const text = await scrapeUntil(
      (t) =>
        (sample(t, "fred_chain_transactions_total", { type: "acknowledge", outcome: "success" }) ?? 0) >= 1,
      "the acknowledge tx counted",
    );
    for (const [outcome, n] of [
      ["stored", 1],
      ["invalid", 1],
      ["hash_mismatch", 1],
      ["too_large", 1],
      ["conflict", 1],
    ] as const)
      assert.equal(sample(text, "fred_payload_uploads_total", { outcome }), n, outcome);
    assert.equal(sample(text, "fred_payload_size_bytes_count"), 1);
    assert.equal(sample(text, "fred_payload_size_bytes_sum"), MANIFEST.length);
    assert.ok(sample(text, "fred_payloads_stored")! >= 1);
    assert.ok(
      sample(text, "fred_backend_requests_total", { backend: "mock-1", operation: "provision" })! >= 1,
    );
    assert.ok(
      sample(text, "fred_backend_requests_total", {
        backend: "mock-1",
        operation: "stats",
        status: "200",
      })! >= 1,
    );
    assert.ok(
      sample(text, "fred_backend_request_duration_seconds_count", {
        backend: "mock-1",
        operation: "provision",
      })! >= 1,
    );
  });

  it("an accepted WebSocket upgrade is counted once as 101, a refused one by its status", async () => {
    const url = `${stack.api.replace(/^http/, "ws")}/v1/leases/${manifestLease}/events`;
    const stream = await new WsClient(
      `${url}?token=${encodeURIComponent(tenant1.access(manifestLease))}`,
    ).open();
    stream.close();
    await new WsClient(`${url}?token=nope`).open().catch(() => {});
    const route = "/v1/leases/:lease_uuid/events";
    const text = await scrapeUntil(
      (t) => sample(t, "fred_api_requests_total", { route, status: "401" }) === 1,
      "the refused upgrade counted",
    );
    assert.equal(sample(text, "fred_api_requests_total", { method: "GET", route, status: "101" }), 1);
  });

  it("the provider key's fee balance is the chain's", async () => {
    const address = stack.account("provider").address;
    const text = await scrapeUntil(
      (t) => sample(t, "fred_provider_balance", { denom: "umfx" }) !== undefined,
      "a balance",
    );
    const shown = sample(text, "fred_provider_balance", { denom: "umfx" })!;
    const onChain = Number(await stack.tenant.balance(address, "umfx"));
    assert.ok(shown > 0);
    // Fees paid (or withdrawals received) since the read move it only a little.
    assert.ok(Math.abs(shown - onChain) < onChain * 0.01, `${shown} vs ${onChain}`);
  });

  it("chain queries are timed by query path (the lease reads providerd has made)", async () => {
    const text = await scrapeUntil(
      (t) => (sample(t, "fred_chain_query_duration_seconds_count") ?? 0) > 0,
      "a chain query timed",
    );
    const paths = new Set(
      [...text.matchAll(/^fred_chain_query_duration_seconds_count\{query="([^"]+)"\} (\d+)/gm)].map(
        (m) => m[1],
      ),
    );
    // The sweep and the tenant reads above ask the billing module for leases.
    assert.ok(
      [...paths].some((p) => /billing\.v1\.Query\/Lease/.test(p as string)),
      [...paths].join(", "),
    );
  });

  it("capacity refusals, callback timeouts and provisions in flight on the docker-large backends", async () => {
    // Routing spreads docker-large between the two (equal load, then round-robin, then the
    // lower CPU ratio): a few leases reach both.
    const moved = (t: string) =>
      (sample(t, "fred_backend_insufficient_resources_total", { backend: "mock-2" }) ?? 0) >= 1 &&
      (sample(t, "fred_callback_timeouts_total", { backend: "mock-3" }) ?? 0) >= 1;
    let text = await metrics();
    for (let i = 0; i < 6 && !moved(text); i++) {
      await stack.createLeases(1, "docker-large");
      text = await scrapeUntil(
        (t) =>
          moved(t) || (sample(t, "fred_backend_requests_total", { operation: "provision" }) ?? 0) >= i + 2,
        "the lease sent",
      );
      await until(
        async () => {
          text = await metrics();
          return moved(text);
        },
        "both moved",
        { timeoutMs: 8_000 },
      ).catch(() => {});
    }
    assert.ok(moved(text), text);
    assert.ok(sample(text, "fred_provisions_in_flight")! >= 1, "mock-3's lease waits for its callback");
    // The refused lease was rejected on chain.
    await scrapeUntil(
      (t) => (sample(t, "fred_chain_transactions_total", { type: "reject", outcome: "success" }) ?? 0) >= 1,
      "the reject tx counted",
    );
  });

  it("with no load figures from any docker-large backend, routing falls back; a dead backend's breaker opens", async () => {
    const before = sample(await metrics(), "fred_routing_fallbacks_total") ?? 0;
    await Promise.all([stack.stopMock(1), stack.stopMock(2)]);
    // The stats poll (every 15 s) drops a reading it cannot renew.
    await scrapeUntil(
      (t) =>
        ["mock-2", "mock-3"].every(
          (backend) =>
            (sample(t, "fred_backend_requests_total", { backend, operation: "stats", status: "error" }) ??
              0) >= 1,
        ),
      "the stats poll failed on both",
    );
    await stack.createLeases(1, "docker-large");
    await scrapeUntil((t) => sample(t, "fred_routing_fallbacks_total")! > before, "a routing fallback");
    // /health reads every unfenced backend's stats: five failures in a row open the breaker.
    const text = await scrapeUntil((t) => {
      void fetch(`${stack.api}/health`).then((r) => r.body?.cancel());
      return sample(t, "fred_backend_circuit_breaker_state", { backend: "mock-2" }) === 2;
    }, "mock-2's breaker open");
    assert.equal(sample(text, "fred_backend_circuit_breaker_state", { backend: "mock-1" }), 0);
  });
});
