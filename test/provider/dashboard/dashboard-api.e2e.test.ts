import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Agent, fetch as undiciFetch } from "undici";
import { findWebRoot } from "../../../src/provider/dashboard/static-files.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { TestPki } from "../../helpers/certs.ts";
import { runFred, until } from "../../support/index.ts";
import { sample, scrape } from "../../support/metrics.ts";
import { mockSkus, Stack } from "../e2e/stack.ts";

/**
 * The operator dashboard's read API through real processes: a devnet, two mock backends
 * (mock-1 serves docker-small, mock-2 docker-medium) with leases on both, and providerd
 * with its operator listener on a free port. Each answer is checked against the chain and
 * the placement store; every /api/ route refuses without the token and gives no data.
 */
const stack = new Stack();
let token: string;
let onOne: string[];
let onTwo: string[];
let closed: string;

const SAMPLE_MS = 500;

before(async () => {
  await stack.start(
    (s) => [
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" },
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-medium")), MOCK_BACKEND_DELAY: "0s" },
    ],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-medium")] }];
    },
  );
  await stack.startProviderd({
    FRED_DASHBOARD_SAMPLE_MS: String(SAMPLE_MS),
    FRED_DASHBOARD_CHAIN_TTL_MS: "200",
    FRED_LOG_LEVEL: "info",
  });
  token = readFileSync(join(dirname(stack.placementPath), "operator-token"), "utf8").trim();
  onOne = await stack.createLeases(2, "docker-small");
  onTwo = await stack.createLeases(1, "docker-medium");
  closed = (await stack.createLeases(1, "docker-small"))[0] as string;
  await stack.waitState([...onOne, ...onTwo, closed], "LEASE_STATE_ACTIVE");
  await stack.tenant.closeLeases([closed], "done");
  await stack.waitState([closed], "LEASE_STATE_CLOSED");
});

after(async () => {
  await stack.close();
});

const auth = () => ({ authorization: `Bearer ${token}` });

/** A GET with the path sent exactly as written (fetch would normalize `/./` and more). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method: "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${stack.operator}${path}`, { headers: auth() });
  assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
  return (await res.json()) as T;
}

function placements(): PlacementStore {
  return PlacementStore.open(stack.placementPath, stack.keys.provider_uuid, { readonly: true });
}

interface Overview {
  provider: { address: string; version: string; uptime_seconds: number };
  chain: { height: number | null; last_block_at: string | null; lag_seconds: number | null };
  leases: {
    chain: Record<string, number> | null;
    records: { confirmed: number; provisioning: number; conflicts: number };
  };
  provisions_per_hour: { hour: string; succeeded: number; failed: number }[];
  earnings: { withdrawn: unknown[]; accrued: { denom: string; amount: string }[] | null };
  credit_closes: { last_24h: number; total: number };
  reconciler: { last_sweep_at: string | null; complete: boolean | null; actions: Record<string, number> };
  alerts: { name: string; severity: string; summary: string }[];
}

interface Fleet {
  backends: {
    name: string;
    url_host: string;
    healthy: boolean;
    storage_id: string | null;
    fenced: boolean;
    draining: boolean;
    breaker: string;
    cpu: { allocated: number; total: number } | null;
    version: string | null;
    memory: { allocated: number; total: number } | null;
    disk: { allocated: number; total: number } | null;
    leases: number;
    skus: string[];
    last_inventory_at: string | null;
  }[];
}

describe("operator dashboard API (devnet + two mock backends + providerd)", () => {
  it("creates the token file 0600 beside the placement store, 64 hex characters", () => {
    const path = join(dirname(stack.placementPath), "operator-token");
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.match(token, /^[0-9a-f]{64}$/);
    const log = stack.providerd!.stderr();
    assert.ok(!log.includes(token), "the token is never logged");
    assert.match(log, new RegExp(`"path":"${path}".*"msg":"operator token created \\(mode 0600\\)"`));
    assert.match(log, new RegExp(`"url":"${stack.operator}".*"msg":"dashboard listening"`));
  });

  it("GET /api/overview counts leases as the chain and the placement store do", async () => {
    const active = [...onOne, ...onTwo];
    let o: Overview | undefined;
    await until(async () => {
      o = await api<Overview>("/api/overview");
      return o.leases.chain?.active === active.length && o.leases.chain?.closed === 1;
    }, "overview counts the chain's leases");
    const chainActive = (await Promise.all(active.map((u) => stack.leaseState(u)))).filter(
      (s) => s === "LEASE_STATE_ACTIVE",
    ).length;
    assert.equal(o!.leases.chain!.active, chainActive);
    assert.equal(o!.leases.chain!.pending, 0);
    assert.equal(o!.provider.address, stack.account("provider").address);
    const store = placements();
    try {
      await until(async () => {
        o = await api<Overview>("/api/overview");
        return o.leases.records.confirmed === store.placements.counts().placements;
      }, "overview counts the store's records");
      assert.equal(o!.leases.records.confirmed, active.length);
      assert.equal(o!.leases.records.conflicts, store.placements.counts().conflicts);
    } finally {
      store.close();
    }
    assert.ok(o!.chain.height !== null && o!.chain.height > 0);
    assert.equal(o!.provisions_per_hour.length, 24);
    const provisioned = o!.provisions_per_hour.reduce((n, h) => n + h.succeeded, 0);
    assert.equal(provisioned, active.length + 1, "four provisions settled in this process");
    assert.ok(o!.reconciler.last_sweep_at !== null);
    assert.equal(o!.reconciler.complete, true);
    assert.ok(Array.isArray(o!.earnings.accrued));
    assert.deepEqual(o!.alerts, []);
  });

  it("GET /api/fleet lists both backends with their leases, storage and CPU", async () => {
    let f: Fleet | undefined;
    await until(async () => {
      f = await api<Fleet>("/api/fleet");
      return f.backends.every((b) => b.cpu !== null) && f.backends[0]?.leases === onOne.length;
    }, "fleet with stats and store counts");
    const [one, two] = f!.backends;
    assert.equal(one!.name, "mock-1");
    assert.equal(two!.name, "mock-2");
    assert.equal(one!.url_host, new URL(stack.mocks[0]!.ready.url).host);
    assert.equal(one!.storage_id, stack.mocks[0]!.ready.storage_id);
    assert.equal(two!.storage_id, stack.mocks[1]!.ready.storage_id);
    assert.equal(one!.leases, onOne.length);
    assert.equal(two!.leases, onTwo.length);
    for (const b of f!.backends) {
      assert.equal(b.healthy, true);
      assert.equal(b.fenced, false);
      assert.equal(b.breaker, "closed");
      assert.ok(b.last_inventory_at !== null);
      assert.match(String(b.version), /^\d+\.\d+\.\d+/, `${b.name}: the version its /stats reports`);
      // Memory and disk as the backend's /stats reports them (MB there, bytes here).
      assert.ok(b.memory !== null && b.memory.total > 0 && b.memory.total % (1024 * 1024) === 0, b.name);
      assert.ok(b.disk !== null && b.disk.allocated <= b.disk.total, b.name);
      // One reading: every lease holds 0.5 cores, 512 MB and 1024 MB of disk (mockSkus).
      const leasesHeld = b.cpu!.allocated / 0.5;
      assert.equal(b.memory.allocated, leasesHeld * 512 * 1024 * 1024, b.name);
      assert.equal(b.disk.allocated, leasesHeld * 1024 * 1024 * 1024, b.name);
    }
    assert.deepEqual(one!.skus, [stack.sku("docker-small")]);
  });

  it("GET /api/leases lists the chain's leases with their records; filters, pages and finds by UUID or tenant", async () => {
    type Row = {
      uuid: string;
      tenant: string;
      state: string;
      backend: string | null;
      sku: string | null;
      record_state: string | null;
      created_at: string | null;
    };
    type Page = { leases: Row[]; next_cursor: string | null };
    const all = await api<Page>("/api/leases");
    const uuids = [...onOne, ...onTwo, closed];
    assert.deepEqual(
      all.leases.map((l) => l.uuid),
      [...uuids].sort(),
    );
    assert.equal(all.next_cursor, null);
    const byUuid = new Map(all.leases.map((l) => [l.uuid, l]));
    for (const u of onOne) {
      assert.equal(byUuid.get(u)!.backend, "mock-1");
      assert.equal(byUuid.get(u)!.state, "active");
      assert.equal(byUuid.get(u)!.record_state, "confirmed");
      assert.equal(byUuid.get(u)!.sku, stack.sku("docker-small"));
      assert.equal(byUuid.get(u)!.tenant, stack.tenant.address);
      assert.ok(byUuid.get(u)!.created_at !== null);
    }
    assert.equal(byUuid.get(onTwo[0]!)!.backend, "mock-2");
    assert.equal(byUuid.get(closed)!.state, "closed");

    const active = await api<Page>("/api/leases?state=active");
    assert.equal(active.leases.length, onOne.length + onTwo.length);
    const two = await api<Page>("/api/leases?backend=mock-2");
    assert.deepEqual(
      two.leases.map((l) => l.uuid),
      onTwo,
    );
    const medium = await api<Page>(`/api/leases?sku=${stack.sku("docker-medium")}`);
    assert.deepEqual(
      medium.leases.map((l) => l.uuid),
      onTwo,
    );
    const found = await api<Page>(`/api/leases?q=${onOne[0]!.slice(0, 13)}`);
    assert.ok(found.leases.some((l) => l.uuid === onOne[0]));
    assert.ok(found.leases.every((l) => l.uuid.startsWith(onOne[0]!.slice(0, 13))));
    const mine = await api<Page>(`/api/leases?q=${stack.tenant.address}`);
    assert.equal(mine.leases.length, uuids.length);
    const other = await api<Page>(`/api/leases?q=${stack.account("tenant2").address}`);
    assert.deepEqual(other.leases, []);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await api<Page>(`/api/leases?limit=2${cursor === null ? "" : `&cursor=${cursor}`}`);
      assert.ok(page.leases.length <= 2);
      seen.push(...page.leases.map((l) => l.uuid));
      cursor = page.next_cursor;
    } while (cursor !== null);
    assert.deepEqual(seen, [...uuids].sort());
  });

  it("GET /api/leases refuses bad query values with 400 and the envelope", async () => {
    for (const q of [
      "limit=0",
      "limit=201",
      "limit=abc",
      "state=running",
      "backend=nope",
      "sku=not-a-uuid",
      "q=manifest1notanaddress",
      "q=ZZZ",
      "cursor=%%%",
      "cursor=bm90LWEtdXVpZA",
      "color=red",
      "state=active&state=closed",
    ]) {
      const res = await fetch(`${stack.operator}/api/leases?${q}`, { headers: auth() });
      assert.equal(res.status, 400, q);
      const body = (await res.json()) as { error: string; code: number };
      assert.equal(body.code, 400, q);
      assert.equal(typeof body.error, "string");
    }
  });

  it("GET /api/leases/{uuid}: chain state, placement, releases, events; 404 unknown, 400 malformed", async () => {
    type Detail = {
      uuid: string;
      tenant: string;
      chain: { state: string; items: { sku: string; quantity: number }[] } | null;
      placement: { backend: string; state: string; since: string } | null;
      attempts: unknown[];
      releases: { version: number; status: string; image: string | null }[];
      diagnostics: { status: string } | null;
      events: { at: string; kind: string; detail: string }[];
    };
    const d = await api<Detail>(`/api/leases/${onTwo[0]}`);
    assert.equal(d.uuid, onTwo[0]);
    assert.equal(d.tenant, stack.tenant.address);
    assert.equal(d.chain!.state, "active");
    assert.deepEqual(d.chain!.items, [{ sku: stack.sku("docker-medium"), quantity: 1 }]);
    assert.equal(d.placement!.backend, "mock-2");
    assert.equal(d.placement!.state, "confirmed");
    assert.deepEqual(d.attempts, []);
    assert.ok(d.releases.length >= 1, "the owner's release history");
    assert.equal(d.releases[0]!.version, 1);
    assert.ok(!JSON.stringify(d).includes('manifest"'), "no manifest in the answer");
    assert.equal(d.diagnostics!.status, "ready");
    assert.ok(d.events.some((e) => e.kind === "chain_created"));
    assert.ok(d.events.some((e) => e.kind === "placement_confirmed"));

    const gone = await api<Detail>(`/api/leases/${closed}`);
    assert.equal(gone.chain!.state, "closed");

    const unknown = await fetch(`${stack.operator}/api/leases/${crypto.randomUUID()}`, { headers: auth() });
    assert.equal(unknown.status, 404);
    assert.deepEqual(await unknown.json(), { error: "lease not found", code: 404 });
    for (const bad of ["not-a-uuid", onTwo[0]!.toUpperCase(), `${onTwo[0]}0`]) {
      const res = await fetch(`${stack.operator}/api/leases/${bad}`, { headers: auth() });
      assert.equal(res.status, 400, bad);
      assert.deepEqual(await res.json(), { error: "invalid lease UUID format", code: 400 });
    }
  });

  it("GET /api/series: samples every step, the provisions and API requests counted; bad windows 400", async () => {
    type Series = {
      step_seconds: number;
      window_seconds: number;
      series: Record<string, [number, number | null][]> & { earnings: Record<string, [number, number][]> };
    };
    await fetch(`${stack.api}/v1/provider`);
    let s: Series | undefined;
    await until(async () => {
      s = await api<Series>("/api/series?window=1h");
      const leases = s.series.leases_active!;
      const asked = s.series.api_requests_per_second!.some(([, v]) => (v ?? 0) > 0);
      return asked && leases.length >= 2 && leases.at(-1)![1] === onOne.length + onTwo.length;
    }, "samples with the active leases and the tenant API request");
    assert.equal(s!.step_seconds, SAMPLE_MS / 1000);
    assert.equal(s!.window_seconds, 3600);
    const provisions = s!.series.provisions_per_minute!.reduce((n, [, v]) => n + (v ?? 0), 0);
    assert.ok(provisions > 0, "a provision was counted in some step");
    const latencies = s!.series.provision_latency_p50_seconds!.filter(([, v]) => v !== null);
    assert.ok(latencies.length > 0, "a step with provisions has a latency");
    const requests = s!.series.api_requests_per_second!.reduce((n, [, v]) => n + (v ?? 0), 0);
    assert.ok(requests > 0, "tenant API requests counted");
    for (const [t] of s!.series.leases_active!) assert.ok(Number.isInteger(t) && t > 1_700_000_000);
    assert.equal((await api<Series>("/api/series")).window_seconds, 86_400);
    for (const q of ["window=2h", "window=", "window=24h&x=1", "window=1h&window=6h"]) {
      const res = await fetch(`${stack.operator}/api/series?${q}`, { headers: auth() });
      assert.equal(res.status, 400, q);
      assert.equal(((await res.json()) as { code: number }).code, 400);
    }
  });

  it("every /api/ route answers 401 without the token or with a wrong one, and no data", async () => {
    for (const path of [
      "/api/overview",
      "/api/fleet",
      "/api/leases",
      `/api/leases/${onOne[0]}`,
      "/api/series",
    ]) {
      for (const headers of [{}, { authorization: `Bearer ${"0".repeat(64)}` }]) {
        const res = await fetch(`${stack.operator}${path}`, { headers });
        assert.equal(res.status, 401, path);
        assert.equal(res.headers.get("www-authenticate"), "Bearer");
        assert.equal(res.headers.get("cache-control"), "no-store");
        assert.deepEqual(await res.json(), { error: "unauthorized", code: 401 });
      }
    }
  });

  it("an API path spelt otherwise (escapes, dot segments, case) is still refused without the token", async () => {
    for (const path of [
      "/%61pi/overview",
      "/api/%6fverview",
      "/./api/fleet",
      "/API/overview",
      "//api/overview",
      "/api/nothing",
    ]) {
      const res = await rawGet(stack.operator, path);
      assert.equal(res.status, 401, path);
      assert.deepEqual(JSON.parse(res.body), { error: "unauthorized", code: 401 }, path);
    }
  });

  it("the token without its Bearer scheme, or with a character changed, is refused", async () => {
    const changed = `${token.slice(0, -1)}${token.endsWith("0") ? "1" : "0"}`;
    for (const authorization of [token, `Bearer ${changed}`, `Basic ${token}`]) {
      const res = await fetch(`${stack.operator}/api/overview`, { headers: { authorization } });
      assert.equal(res.status, 401, authorization.slice(0, 8));
    }
  });

  it("any other method is 405; an unknown /api/ route is 404; both with the envelope", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const res = await fetch(`${stack.operator}/api/overview`, { method, headers: auth() });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get("allow"), "GET, HEAD");
      assert.deepEqual(await res.json(), { error: "method not allowed", code: 405 });
    }
    const missing = await fetch(`${stack.operator}/api/nothing`, { headers: auth() });
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "not found", code: 404 });
  });

  it("serves the page shell without a token, with the security headers, and nothing outside its root", async () => {
    const page = await fetch(`${stack.operator}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(await page.text(), /<html/);
    // From source the page's inline import map is admitted by its hash, and nothing else inline.
    const web = findWebRoot();
    assert.equal(web.kind, "source");
    assert.match(web.importMapHash ?? "", /^'sha256-[A-Za-z0-9+/]{43}='$/);
    assert.equal(
      page.headers.get("content-security-policy"),
      `default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self' ${web.importMapHash}; connect-src 'self'; frame-ancestors 'none'`,
    );
    assert.equal(page.headers.get("x-content-type-options"), "nosniff");
    assert.equal(page.headers.get("referrer-policy"), "no-referrer");
    for (const path of [
      "/assets/../../../../package.json",
      "/assets/%2e%2e/%2e%2e/config/schema.ts",
      "/package.json",
    ]) {
      const res = await fetch(`${stack.operator}${path}`);
      assert.equal(res.status, 404, path);
    }
  });

  it("the tenant port serves nothing of the dashboard, and GET /v1/provider shows no operator detail", async () => {
    const res = await fetch(`${stack.api}/api/overview`, { headers: auth() });
    assert.equal(res.status, 404);
    const info = await (await fetch(`${stack.api}/v1/provider`)).text();
    assert.ok(!info.includes("operator"), info);
    assert.ok(!info.includes(new URL(stack.operator).port), "the operator port is not published");
  });

  // Last: it leaves this address without failure budget for a while.
  it("limits failed attempts per address (429 with Retry-After); the right token still passes", async () => {
    let limited: Response | undefined;
    for (let i = 0; i < 40 && limited === undefined; i++) {
      const res = await fetch(`${stack.operator}/api/fleet`, { headers: { authorization: "Bearer wrong" } });
      if (res.status === 429) limited = res;
      else assert.equal(res.status, 401);
    }
    assert.ok(limited !== undefined, "refused after the burst of failures");
    assert.ok(Number(limited.headers.get("retry-after")) >= 1);
    assert.deepEqual(await limited.json(), { error: "too many failed authentication attempts", code: 429 });
    const ok = await fetch(`${stack.operator}/api/fleet`, { headers: auth() });
    assert.equal(ok.status, 200);
  });

  it("refuses to start with a token file others may read, or an empty one, naming the key", async () => {
    await stack.stopProviderd();
    const path = join(dirname(stack.placementPath), "operator-token");
    try {
      chmodSync(path, 0o644);
      const open = await runFred(["providerd", "-c", stack.configPath]);
      assert.equal(open.code, 1);
      assert.match(
        open.stderr,
        /operator_token_file .*operator-token has mode 0644: it must not be readable or writable by group or others/,
      );
      chmodSync(path, 0o600);
      writeFileSync(path, "");
      const empty = await runFred(["providerd", "-c", stack.configPath]);
      assert.equal(empty.code, 1);
      assert.match(empty.stderr, /operator_token_file .*operator-token is empty/);
    } finally {
      chmodSync(path, 0o600);
      writeFileSync(path, `${token}\n`);
    }
  });

  it("with operator_client_ca_file: a client certificate of that CA needs no token; no certificate, no connection", async () => {
    const pki = new TestPki(stack.dir);
    pki.selfSigned("op-ca", "/CN=fred operator test CA");
    pki.issue(
      "op-server",
      "op-ca",
      "/CN=127.0.0.1",
      "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    );
    pki.issue("op-client", "op-ca", "/CN=operator", "extendedKeyUsage=clientAuth\n");
    pki.selfSigned("other-ca", "/CN=somebody else");
    pki.issue("stranger", "other-ca", "/CN=stranger", "extendedKeyUsage=clientAuth\n");
    stack.writeConfig(stack.backendOverrides, {
      ...stack.extraConfig,
      operator_tls_cert_file: pki.file("op-server.pem"),
      operator_tls_key_file: pki.file("op-server.key"),
      operator_client_ca_file: pki.file("op-ca.pem"),
    });
    await stack.startProviderd();
    const url = stack.operator;
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = readFileSync(pki.file("op-ca.pem"), "utf8");
    const client = new Agent({
      connect: {
        ca,
        cert: readFileSync(pki.file("op-client.pem")),
        key: readFileSync(pki.file("op-client.key")),
      },
    });
    const res = await undiciFetch(`${url}/api/fleet`, { dispatcher: client });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { backends: unknown[] }).backends.length, 2);

    const anonymous = new Agent({ connect: { ca } });
    await assert.rejects(undiciFetch(`${url}/api/fleet`, { dispatcher: anonymous, headers: auth() }));
    await assert.rejects(undiciFetch(`${url}/`, { dispatcher: anonymous }));
    const stranger = new Agent({
      connect: {
        ca,
        cert: readFileSync(pki.file("stranger.pem")),
        key: readFileSync(pki.file("stranger.key")),
      },
    });
    await assert.rejects(undiciFetch(`${url}/api/fleet`, { dispatcher: stranger }));
    await Promise.all([client.close(), anonymous.close(), stranger.close()]);
    // The served certificate's expiry is exported beside the API listener's.
    const notAfter = Date.parse(new X509Certificate(readFileSync(pki.file("op-server.pem"))).validTo) / 1000;
    const exposition = await scrape(`${stack.api}/metrics`);
    assert.equal(
      sample(exposition, "fred_tls_certificate_expiry_timestamp_seconds", { listener: "operator" }),
      notAfter,
    );
  });

  // Last: the chain goes away for good.
  it("without the chain: the overview still answers (chain counts null, records kept), the lease list 503", async () => {
    await stack.devnet.stop();
    const headers = { authorization: `Bearer ${token}` };
    const get = (path: string) =>
      undiciFetch(`${stack.operator}${path}`, {
        headers,
        dispatcher: new Agent({
          connect: {
            ca: readFileSync(join(stack.dir, "op-ca.pem")),
            cert: readFileSync(join(stack.dir, "op-client.pem")),
            key: readFileSync(join(stack.dir, "op-client.key")),
          },
        }),
      });
    let o: Overview | undefined;
    await until(async () => {
      const res = await get("/api/overview");
      o = (await res.json()) as Overview;
      return res.status === 200 && o.leases.chain === null;
    }, "overview without chain counts");
    assert.equal(o!.leases.records.confirmed, onOne.length + onTwo.length);
    const list = await get("/api/leases");
    assert.equal(list.status, 503);
    assert.deepEqual(await list.json(), { error: "the chain did not answer; try again shortly", code: 503 });
    assert.ok(Number(list.headers.get("retry-after")) >= 1);
  });
});
