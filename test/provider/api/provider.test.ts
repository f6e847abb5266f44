import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pkg from "../../../package.json" with { type: "json" };
import { BackendCatalog, unionOfRegistries } from "../../../src/provider/api/backend-catalog.ts";
import type { BackendConfig } from "../../../src/provider/config/index.ts";
import { until } from "../../support/index.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";

/**
 * `GET /v1/provider` through a real providerd with two mock backend processes: every
 * pinned field with its configured value, the registries each backend reports on
 * `/stats`, and a backend that goes down named as unreachable while the endpoint keeps
 * answering. Requests come through a trusted proxy (127.0.0.1) for a made-up client IP
 * each, so the small per-IP budget is spent only where a test means to spend it.
 */
const stack = new Stack();
let clientN = 0;
const freshClient = () => `10.7.0.${++clientN}`;

before(async () => {
  await stack.start(
    (s): Record<string, string>[] => [
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small"), s.sku("docker-medium")) },
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-large")),
        MOCK_BACKEND_ALLOWED_REGISTRIES: "quay.io, ghcr.io",
      },
    ],
    (s) => {
      s.backendOverrides = [
        { skus: [s.sku("docker-small"), s.sku("docker-medium")] },
        { skus: [s.sku("docker-large")] },
      ];
      s.extraConfig = {
        rate_limit_rps: 1,
        rate_limit_burst: 3,
        tenant_rate_limit_rps: 4,
        tenant_rate_limit_burst: 6,
        trusted_proxies: ["127.0.0.1/32"],
        max_request_body_size: 500_000,
      };
    },
  );
  await stack.launchProviderd();
});

after(async () => {
  await stack.close();
});

async function provider(client = freshClient()): Promise<{ res: Response; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.api}/v1/provider`, { headers: { "x-forwarded-for": client } });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

type BackendView = { name: string; status: string; skus: string[]; allowed_registries?: string[] | null };
const backendsOf = (body: Record<string, unknown>) => body.backends as BackendView[];

describe("GET /v1/provider (devnet + providerd + mock backends)", () => {
  it("answers every pinned field with the configured and reported values, without a token", async () => {
    // The first /stats poll runs right after the listener binds; wait until both answered.
    const { res, body } = await until(async () => {
      const a = await provider();
      return backendsOf(a.body).every((b) => b.status === "available") ? a : undefined;
    }, "both backends available in /v1/provider");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(body.provider_uuid, stack.keys.provider_uuid);
    assert.equal(body.provider_address, stack.account("provider").address);
    assert.equal(body.version, pkg.version);
    assert.deepEqual(backendsOf(body), [
      {
        name: "mock-1",
        skus: [stack.sku("docker-small"), stack.sku("docker-medium")],
        default: true,
        status: "available",
        allowed_registries: ["docker.io", "ghcr.io"],
      },
      {
        name: "mock-2",
        skus: [stack.sku("docker-large")],
        default: false,
        status: "available",
        allowed_registries: ["quay.io", "ghcr.io"],
      },
    ]);
    assert.deepEqual(body.allowed_registries, ["docker.io", "ghcr.io", "quay.io"]);
    assert.deepEqual(body.limits, {
      max_request_body_bytes: 500_000,
      max_manifest_bytes: 1024 * 1024,
      max_ports: 64,
      max_env: 256,
      max_labels: 128,
      max_tmpfs: 4,
      max_expose: 64,
      max_service_name_length: 63,
      max_dependency_depth: 10,
      min_stop_grace_period_seconds: 1,
      max_stop_grace_period_seconds: 120,
    });
    assert.deepEqual(body.rate_limits, {
      per_ip: { rps: 1, burst: 3 },
      per_tenant: { rps: 4, burst: 6 },
    });
    assert.equal(body.token_lifetime_seconds, 30);
    assert.equal(body.token_future_skew_seconds, 10);
  });

  it("spends the per-IP budget like every route: 429 with Retry-After past the burst", async () => {
    const client = freshClient();
    const codes: number[] = [];
    let refused: Response | undefined;
    // Burst 3 at 1/s: a slow run may see a refilled token or two before the refusal.
    while (refused === undefined && codes.length < 20) {
      const { res } = await provider(client);
      codes.push(res.status);
      assert.ok(res.headers.get("ratelimit-limit") !== null, "RateLimit-* headers on every answer");
      if (res.status === 429) refused = res;
    }
    assert.deepEqual(codes.slice(0, 3), [200, 200, 200]);
    assert.ok(refused !== undefined, `never refused: ${codes}`);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
  });

  it("a backend that goes down is named unreachable; the endpoint still answers", async () => {
    await stack.stopMock(1);
    try {
      // The next /stats poll (every 15 s) sees it; every answer meanwhile is a 200.
      const { body } = await until(
        async () => {
          const a = await provider();
          assert.equal(a.res.status, 200);
          return backendsOf(a.body).find((b) => b.name === "mock-2")?.status === "unreachable"
            ? a
            : undefined;
        },
        "mock-2 unreachable in /v1/provider",
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      const [one, two] = backendsOf(body);
      assert.equal(one?.status, "available");
      // What it last reported stays known; it is only no longer reachable.
      assert.deepEqual(two?.allowed_registries, ["quay.io", "ghcr.io"]);
      const text = JSON.stringify(body);
      for (const leak of ["ECONNREFUSED", "fetch failed", "127.0.0.1", "circuit"]) {
        assert.ok(!text.includes(leak), `internal text in ${text}`);
      }
    } finally {
      await stack.restartMock(1);
    }
    await until(
      async () => backendsOf((await provider()).body).every((b) => b.status === "available"),
      "mock-2 available again",
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  });
});

describe("BackendCatalog", () => {
  const backend = (name: string, flags: Partial<BackendConfig> = {}) =>
    ({ name, skus: [], isDefault: false, fenced: false, draining: false, ...flags }) as BackendConfig;

  it("orders availability: fenced, unknown, unreachable, draining, available", () => {
    const catalog = new BackendCatalog([
      backend("a"),
      backend("b", { fenced: true }),
      backend("c", { draining: true }),
      backend("d"),
      backend("e"),
    ]);
    const ok = { totalCpuCores: 1, allocatedCpuCores: 0, diskWithheld: false };
    catalog.record(
      new Map([
        ["a", { ...ok, allowedRegistries: ["docker.io"] }],
        ["c", { ...ok, allowedRegistries: ["c.example"] }],
        ["d", undefined],
      ]),
    );
    assert.deepEqual(
      catalog.entries().map((e) => [e.name, e.status, e.allowedRegistries]),
      [
        ["a", "available", ["docker.io"]],
        ["b", "fenced", undefined],
        ["c", "draining", ["c.example"]],
        ["d", "unreachable", undefined],
        ["e", "unknown", undefined],
      ],
    );
    // Draining and fenced backends take no new leases: their registries are not offered.
    assert.deepEqual(unionOfRegistries(catalog.entries()), ["docker.io"]);
    // A failed reading keeps what the backend last said; a backend without an allowlist opens the union.
    catalog.record(new Map([["a", undefined]]));
    assert.deepEqual(catalog.entries()[0]?.allowedRegistries, ["docker.io"]);
    assert.equal(catalog.entries()[0]?.status, "unreachable");
    catalog.record(new Map([["e", { ...ok, allowedRegistries: null }]]));
    assert.equal(unionOfRegistries(catalog.entries()), null);
  });
});
