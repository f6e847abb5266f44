import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { until } from "../../support/index.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";
import { call, envelope, TenantKey } from "./tenant-client.ts";
import { type HttpRefusal, WsClient } from "./ws-client.ts";

/**
 * The listener's edge through a real providerd: the per-IP limit on every route (the
 * callback route keeps its own budget), the per-tenant limit after authentication,
 * X-Forwarded-For from trusted proxies, CORS, security headers and the read and idle
 * timeouts. The budgets are made small so they are reached in a handful of requests.
 */
const stack = new Stack();
let tenant: TenantKey;
const ORIGIN = "https://app.example.com";

before(async () => {
  await stack.start(
    (s) => [{ MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")) }, { MOCK_BACKEND_SKUS: mockSkus() }],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, {}];
      s.extraConfig = {
        rate_limit_rps: 1,
        rate_limit_burst: 5,
        tenant_rate_limit_rps: 1,
        tenant_rate_limit_burst: 3,
        trusted_proxies: ["127.0.0.1/32"],
        cors_origins: [ORIGIN],
        http_read_timeout: "1s",
        http_idle_timeout: "1s",
      };
    },
  );
  tenant = new TenantKey(stack.account("tenant1").private_key_hex);
  await stack.launchProviderd();
  await until(async () => (await fetch(`${stack.api}/readyz`, xff("10.9.9.9"))).status === 200, "ready");
});

after(async () => {
  await stack.close();
});

/** Requests from 127.0.0.1 (a trusted proxy) on behalf of `client`. */
function xff(client: string, extra: Record<string, string> = {}): RequestInit {
  return { headers: { "x-forwarded-for": client, ...extra } };
}

/** Sends raw bytes on one connection and returns everything received until the server closed it. */
async function rawExchange(request: string): Promise<string> {
  const { hostname, port } = new URL(stack.api);
  const socket = connect(Number(port), hostname);
  await once(socket, "connect");
  let answer = "";
  socket.on("data", (d) => {
    answer += String(d);
  });
  socket.write(request);
  await once(socket, "close");
  return answer;
}

async function drain(url: string, init: RequestInit, n: number): Promise<Response[]> {
  const out: Response[] = [];
  for (let i = 0; i < n; i++) out.push(await fetch(url, init));
  return out;
}

describe("listener edge (devnet + providerd + mock backends)", () => {
  it("every answer carries the security headers and no-store", async () => {
    for (const path of ["/health", "/metrics", "/nope", "/v1/leases/x/status"]) {
      const res = await fetch(`${stack.api}${path}`, xff("10.0.0.1"));
      assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
      assert.equal(res.headers.get("x-frame-options"), "DENY", path);
      assert.equal(res.headers.get("cache-control"), "no-store", path);
    }
  });

  it("per-IP limit on operational routes too: 429 with Retry-After and RateLimit-* headers", async () => {
    const answers = await drain(`${stack.api}/health`, xff("10.0.0.2"), 6);
    assert.deepEqual(
      answers.map((r) => r.status),
      [200, 200, 200, 200, 200, 429],
    );
    const first = answers[0]!;
    assert.equal(first.headers.get("ratelimit-limit"), "5");
    assert.equal(first.headers.get("ratelimit-remaining"), "4");
    assert.ok(Number(first.headers.get("ratelimit-reset")) >= 1);
    const refused = answers[5]!;
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.headers.get("ratelimit-remaining"), "0");
    assert.deepEqual(await refused.json(), { error: "rate limit exceeded", code: 429 });
    // Another client behind the same proxy has its own bucket.
    assert.equal((await fetch(`${stack.api}/metrics`, xff("10.0.0.3"))).status, 200);
  });

  it("X-Forwarded-For: the rightmost hop that is not a trusted proxy is the client", async () => {
    await drain(`${stack.api}/health`, xff("10.0.1.1"), 5);
    const spoofedLeft = await fetch(`${stack.api}/health`, xff("6.6.6.6, 10.0.1.1"));
    assert.equal(spoofedLeft.status, 429, "a forged hop left of the client does not buy a new bucket");
    const viaSecondProxy = await fetch(`${stack.api}/health`, xff("10.0.1.1, 127.0.0.1"));
    assert.equal(viaSecondProxy.status, 429, "trusted hops are skipped");
  });

  it("per-tenant limit after authentication, across client addresses", async () => {
    const lease = "0190f3a2-7c1e-7000-8000-00000000abcd";
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const a = await call(stack.api, `/v1/leases/${lease}/status`, tenant.access(lease), xff(`10.0.2.${i}`));
      statuses.push(a.status);
      if (a.status === 429) {
        envelope(a);
        assert.ok(Number(a.headers.get("retry-after")) >= 1);
        assert.equal(a.headers.get("ratelimit-limit"), "3", "the tenant bucket is the tighter one");
      }
    }
    assert.deepEqual(statuses, [404, 404, 404, 429]);
    const ws = `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events?token=${tenant.access(lease)}`;
    const refused = await new WsClient(ws, xff("10.0.2.9") as object).open().catch((e) => e);
    assert.equal((refused as HttpRefusal).status, 429, "before the upgrade");
  });

  it("a tenant flood does not hold up a callback: the lease still becomes ACTIVE", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    let flooding = true;
    let refused = 0;
    const flood = (async () => {
      while (flooding) {
        const res = await fetch(`${stack.api}/v1/leases/${lease}/status`);
        if (res.status === 429) refused++;
        await res.arrayBuffer();
      }
    })();
    try {
      await stack.waitState([lease!], "LEASE_STATE_ACTIVE");
    } finally {
      flooding = false;
      await flood;
    }
    assert.ok(refused > 0, "the flood was being refused");
    const metrics = await (await fetch(`${stack.api}/metrics`, xff("10.0.3.1"))).text();
    assert.doesNotMatch(metrics, /fred_callbacks_total\{outcome="rate_limited"\} [1-9]/);
  });

  it("CORS: the configured origin only, preflights answered", async () => {
    const ok = await fetch(`${stack.api}/health`, xff("10.0.4.1", { origin: ORIGIN }));
    assert.equal(ok.headers.get("access-control-allow-origin"), ORIGIN);
    assert.match(ok.headers.get("vary") ?? "", /Origin/);
    const other = await fetch(`${stack.api}/health`, xff("10.0.4.2", { origin: "https://evil.example" }));
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    const preflight = await fetch(`${stack.api}/v1/leases/x/status`, {
      method: "OPTIONS",
      headers: { origin: ORIGIN, "access-control-request-method": "GET", "x-forwarded-for": "10.0.4.3" },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /Authorization/);
  });

  it("read timeout: a request that never finishes arriving is cut off; idle keep-alive closes", async () => {
    // The head of the request never completes (no blank line): the read deadline ends it.
    const cut = await rawExchange("GET /health HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.0.5.2\r\n");
    assert.match(cut, /^HTTP\/1\.1 408/);
    const idle = await rawExchange("GET /health HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.0.5.1\r\n\r\n");
    assert.match(idle, /^HTTP\/1\.1 200/, "answered, then the idle connection was closed");
  });
});
