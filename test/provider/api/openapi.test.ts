import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { openApiDocument } from "../../../src/provider/api/openapi.ts";
import { until } from "../../support/index.ts";
import { ShellClient } from "../e2e/shell-client.ts";
import { mockSkus, Stack, sha256 } from "../e2e/stack.ts";
import { Harness } from "./harness.ts";
import { OpenApiCheck } from "./openapi-check.ts";
import { TenantKey } from "./tenant-client.ts";
import { WsClient } from "./ws-client.ts";

/**
 * `GET /openapi.json` through a real providerd (devnet, two mock backends): the served
 * document is valid OpenAPI 3.1, and real answers of every documented route — successes
 * and refusals — have a documented status and a body that validates against its schema.
 * mock-2 takes 30 minutes per provision, so its leases stay PENDING with an unresolved
 * attempt (the 503 and 409 cases).
 */
const stack = new Stack();
let tenant1: TenantKey;
let tenant2: TenantKey;
let check: OpenApiCheck;
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

before(async () => {
  await stack.start(
    (s) => [
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small")), MOCK_BACKEND_DELAY: "0s" },
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-large")), MOCK_BACKEND_DELAY: "30m" },
    ],
    (s) => {
      s.backendOverrides = [{ skus: [s.sku("docker-small")] }, { skus: [s.sku("docker-large")] }];
      s.extraConfig = { token_tracker_db_path: join(s.dir, "tokens.db") };
    },
  );
  tenant1 = new TenantKey(stack.account("tenant1").private_key_hex);
  tenant2 = new TenantKey(stack.account("tenant2").private_key_hex);
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

const L = (name: string) => `/v1/leases/{lease_uuid}/${name}`;
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe("GET /openapi.json (devnet + providerd + mock backends)", () => {
  it("serves a valid OpenAPI 3.1 document", async () => {
    const res = await fetch(`${stack.api}/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    const verdict = await new Validator().validate(doc as Parameters<Validator["validate"]>[0]);
    assert.deepEqual(verdict, { valid: true });
    assert.equal(doc.openapi, "3.1.0");
    check = new OpenApiCheck(doc);
    check.problems("/openapi.json", "get", 200, doc, "application/json");
  });

  it("real answers of every lease route conform: successes", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    assert.ok(lease !== undefined);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const p = `/v1/leases/${lease}`;
    const token = tenant1.access(lease);
    const status = await check.fetch(stack.api, L("status"), `${p}/status`, bearer(token));
    assert.equal(status.status, 200);
    assert.equal(
      (await check.fetch(stack.api, L("connection"), `${p}/connection`, bearer(tenant1.fresh(lease)))).status,
      200,
    );
    assert.equal((await check.fetch(stack.api, L("provision"), `${p}/provision`, bearer(token))).status, 200);
    // The forms with our extra keys conform too.
    for (const include of ["credit", "terminal_budget", "credit,terminal_budget"]) {
      const path = `${p}/status?include=${include}`;
      assert.equal((await check.fetch(stack.api, L("status"), path, bearer(token))).status, 200);
    }
    const withBudget = `${p}/provision?include=terminal_budget`;
    assert.equal((await check.fetch(stack.api, L("provision"), withBudget, bearer(token))).status, 200);
    assert.equal((await check.fetch(stack.api, L("releases"), `${p}/releases`, bearer(token))).status, 200);
    assert.equal((await check.fetch(stack.api, L("logs"), `${p}/logs`, bearer(token))).status, 200);
    assert.equal((await check.fetch(stack.api, L("logs"), `${p}/logs?tail=3`, bearer(token))).status, 200);
    // The mock samples every 10 s: the first answer may have no instance yet, later ones do.
    assert.equal((await check.fetch(stack.api, L("usage"), `${p}/usage`, bearer(token))).status, 200);

    const ws = await new WsClient(`${stack.api.replace(/^http/, "ws")}${p}/events?token=${token}`).open();
    try {
      assert.deepEqual(check.problems(L("events"), "get", 101, undefined), []);
      const snapshot = await ws.frame(1);
      assert.equal(snapshot.type, "snapshot");
      assert.deepEqual(check.componentProblems("EventFrame", snapshot), []);
    } finally {
      ws.ws.close();
      await ws.closed;
    }

    const shell = await new ShellClient(
      `${stack.api.replace(/^http/, "ws")}${p}/shell?command=echo&command=hi&token=${tenant1.fresh(lease)}`,
    ).open();
    assert.deepEqual(check.problems(L("shell"), "get", 101, undefined), []);
    assert.equal((await shell.closed).code, 1000);
    assert.equal(shell.stdout, "hi\n");
  });

  it("real answers of every lease route conform: refusals", async () => {
    const [lease] = await stack.createLeases(1, "docker-small");
    assert.ok(lease !== undefined);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const p = `/v1/leases/${lease}`;
    const token = tenant1.access(lease);
    const expect = async (route: string, path: string, code: number, init: RequestInit = {}) => {
      const a = await check.fetch(stack.api, route, path, init);
      assert.equal(a.status, code, `${path}: ${JSON.stringify(a.body)}`);
    };
    const unknown = "0190f3a2-7c1e-7000-8000-00000000cafe";
    for (const name of ["status", "connection", "provision", "releases", "logs", "events", "usage"]) {
      await expect(L(name), `/v1/leases/not-a-uuid/${name}`, 400, bearer(token));
      await expect(L(name), `${p}/${name}`, 401);
      await expect(L(name), `/v1/leases/${unknown}/${name}`, 404, bearer(tenant1.fresh(unknown)));
      await expect(L(name), `${p}/${name}`, 403, bearer(tenant2.fresh(lease)));
    }
    const spent = tenant1.fresh(lease);
    await expect(L("connection"), `${p}/connection`, 200, bearer(spent));
    await expect(L("connection"), `${p}/connection`, 401, bearer(spent));
    await expect(L("logs"), `${p}/logs?tail=0`, 400, bearer(token));
    await expect(L("status"), `${p}/status?include=bogus`, 400, bearer(token));
    await expect(L("provision"), `${p}/provision?include=credit,bogus`, 400, bearer(token));
    await expect(L("logs"), `${p}/logs?tail=10001`, 400, bearer(token));
    await expect(L("events"), `${p}/events?since=x`, 400, bearer(token));
    // A plain GET of the stream (no upgrade) is a 400 envelope.
    await expect(L("events"), `${p}/events`, 400, bearer(token));
    await expect(L("shell"), `${p}/shell`, 400, bearer(token));

    // mock-2 never finishes: its leases keep an unresolved attempt, so reads that need an owner are 503.
    const [slow] = await stack.createLeases(1, "docker-large");
    assert.ok(slow !== undefined);
    const slowToken = tenant1.access(slow);
    await until(async () => {
      const a = await check.fetch(stack.api, L("status"), `/v1/leases/${slow}/status`, bearer(slowToken));
      return (a.body as { provisioning_started?: boolean }).provisioning_started === true;
    }, "provisioning started on mock-2");
    await expect(L("logs"), `/v1/leases/${slow}/logs`, 503, bearer(slowToken));
    await expect(L("releases"), `/v1/leases/${slow}/releases`, 503, bearer(slowToken));
    await expect(L("provision"), `/v1/leases/${slow}/provision`, 200, bearer(slowToken));

    // POST data: 400 (hash mismatch), 401, 403, 202, then 409 for a second payload, 404 when not PENDING.
    const hashHex = hex(sha256(MANIFEST));
    const [pending] = await stack.createLeases(1, "docker-large", sha256(MANIFEST));
    assert.ok(pending !== undefined);
    const post = (tok: string, body: Uint8Array = MANIFEST): RequestInit => ({
      method: "POST",
      body,
      headers: { authorization: `Bearer ${tok}`, "content-type": "application/octet-stream" },
    });
    const data = `/v1/leases/${pending}/data`;
    await expect(L("data"), data, 400, post(tenant1.payload(pending, hashHex), Buffer.from("{}")));
    await expect(L("data"), data, 401, post(tenant1.access(pending)));
    await expect(L("data"), data, 403, post(tenant2.payload(pending, hashHex)));
    await expect(L("data"), data, 202, post(tenant1.payload(pending, hashHex)));
    await expect(L("data"), data, 409, post(tenant1.payload(pending, hashHex)));
    await expect(L("data"), `${p}/data`, 404, post(tenant1.payload(lease, hashHex)));
    await expect(L("data"), `/v1/leases/${unknown}/data`, 404, post(tenant1.payload(unknown, hashHex)));

    // POST restore: every refusal short of a retained source (test/provider/retention has the rest).
    const restore = (tok: string, body: unknown): RequestInit => ({
      method: "POST",
      body: JSON.stringify(body),
      headers: { authorization: `Bearer ${tok}`, "content-type": "application/json" },
    });
    const [fresh] = await stack.createLeases(1, "docker-large", sha256(MANIFEST));
    assert.ok(fresh !== undefined);
    const r = `/v1/leases/${fresh}/restore`;
    const from = { from_lease_uuid: lease };
    await expect(L("restore"), r, 400, restore(tenant1.fresh(fresh), { from_lease_uuid: "x" }));
    await expect(L("restore"), r, 401, restore(tenant1.payload(fresh, hashHex), from));
    await expect(L("restore"), r, 403, restore(tenant2.fresh(fresh), from));
    await expect(L("restore"), `/v1/leases/${unknown}/restore`, 404, restore(tenant1.fresh(unknown), from));
    await expect(L("restore"), r, 404, restore(tenant1.fresh(fresh), from));
    await expect(
      L("restore"),
      `${p}/restore`,
      409,
      restore(tenant1.fresh(lease), { from_lease_uuid: fresh }),
    );
    // POST restart / update: 400 (key missing, bad body), 401, 403, 409 (not ACTIVE), 503 (no chain lease).
    const command = (tok: string, key: string | undefined, body?: object): RequestInit => ({
      method: "POST",
      headers: {
        authorization: `Bearer ${tok}`,
        ...(key === undefined ? {} : { "idempotency-key": key }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const update = { payload: MANIFEST.toString("base64") };
    for (const op of ["restart", "update"]) {
      const body = op === "update" ? update : undefined;
      const k = () => crypto.randomUUID();
      await expect(L(op), `${p}/${op}`, 400, command(tenant1.fresh(lease), undefined, body));
      await expect(L(op), `${p}/${op}`, 401, command(spent, k(), body));
      await expect(L(op), `${p}/${op}`, 403, command(tenant2.fresh(lease), k(), body));
      await expect(L(op), `/v1/leases/${slow}/${op}`, 409, command(tenant1.fresh(slow), k(), body));
      await expect(L(op), `/v1/leases/${unknown}/${op}`, 503, command(tenant1.fresh(unknown), k(), body));
    }
    await expect(L("update"), `${p}/update`, 400, command(tenant1.fresh(lease), crypto.randomUUID(), {}));
  });

  it("real answers of the operational routes conform", async () => {
    await check.fetch(stack.api, "/v1/provider", "/v1/provider");
    await check.fetch(stack.api, "/health", "/health");
    await check.fetch(stack.api, "/readyz", "/readyz");
    await check.fetch(stack.api, "/metrics", "/metrics");
    await check.fetch(stack.api, "/openapi.json", "/openapi.json");
    const [lease] = await stack.createLeases(1, "docker-small");
    assert.ok(lease !== undefined);
    await stack.waitState([lease], "LEASE_STATE_ACTIVE");
    const unknown = "0190f3a2-7c1e-7000-8000-00000000beef";
    const found = await check.fetch(
      stack.api,
      "/workloads",
      `/workloads?lease_uuid=${lease}&lease_uuid=${unknown}`,
    );
    assert.equal(found.status, 200);
    const body = found.body as { workloads: Record<string, { backend_name: string }>; warnings: string[] };
    assert.deepEqual(Object.keys(body.workloads), [lease]);
    assert.equal(body.workloads[lease]?.backend_name, "mock-1");
    assert.deepEqual(body.warnings, []);
    assert.equal((await check.fetch(stack.api, "/workloads", "/workloads")).status, 400);
    assert.equal((await check.fetch(stack.api, "/workloads", "/workloads?lease_uuid=x")).status, 400);
  });

  it("every route and method of the document was exercised above", () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
    const missing: string[] = [];
    for (const [route, methods] of Object.entries(doc.paths)) {
      for (const method of Object.keys(methods)) {
        if (![...check.seen].some((s) => s.startsWith(`${method} ${route} `)))
          missing.push(`${method} ${route}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("the check fails for an answer off the document", () => {
    const good = {
      lease_uuid: "0190f3a2-7c1e-7000-8000-00000000cafe",
      tenant: "manifest1x",
      provider_uuid: "p",
      state: "LEASE_STATE_ACTIVE",
      requires_payload: false,
      payload_received: false,
      provisioning_started: false,
    };
    const route = L("status");
    assert.deepEqual(check.problems(route, "get", 200, good, "application/json"), []);
    assert.notDeepEqual(
      check.problems(route, "get", 200, { ...good, state: "ACTIVE" }, "application/json"),
      [],
    );
    assert.notDeepEqual(
      check.problems(route, "get", 200, { ...good, leaked: "SQLITE_BUSY" }, "application/json"),
      [],
    );
    assert.notDeepEqual(check.problems(route, "get", 418, good, "application/json"), []);
    assert.notDeepEqual(check.problems(route, "get", 401, { error: "unauthorized" }, "application/json"), []);
    assert.notDeepEqual(check.problems(route, "get", 200, good, "text/plain"), []);
  });
});

describe("the OpenAPI document and the tenant routes", () => {
  it("every tenant route the API registers is in the document, and the reverse", async () => {
    const h = await new Harness().start();
    try {
      const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
      const documented = new Set(
        Object.entries(doc.paths)
          .filter(([route]) => route.startsWith("/v1/") || route === "/openapi.json")
          .flatMap(([route, methods]) =>
            Object.keys(methods).map((m) => `${m.toUpperCase()} ${route.replace(/\{(\w+)\}/g, ":$1")}`),
          ),
      );
      const registered = new Set(
        h.routes.filter((r) => r.method !== "HEAD").map((r) => `${r.method} ${r.url}`),
      );
      assert.deepEqual([...registered].sort(), [...documented].sort());
    } finally {
      await h.close();
    }
  });
});
