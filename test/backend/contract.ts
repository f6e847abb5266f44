import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { type Receiver, startReceiver } from "./kit/receiver.ts";
import { type SignedClient, signedClient } from "./kit/signed-client.ts";

/**
 * The backend HTTP contract every backend must pass (mock here, Docker in its own
 * tests). It talks to a running backend over real HTTP and receives its callbacks on a
 * real, signature-checking receiver.
 *
 * Usage from a `*.test.ts` file:
 *   runBackendContractSuite("mock", async () => ({ baseUrl, storageId, secret, … }));
 */
export interface BackendUnderTest {
  baseUrl: string;
  storageId: string;
  /** Current HMAC key (providerd's `hmac_secret` for this backend). */
  secret: string;
  /** Verify-only previous key the backend was started with, when it supports rotation. */
  previousSecret?: string;
  /** The backend's `name` (callback `backend` field). */
  name: string;
  /** A SKU UUID this backend accepts. */
  sku: string;
  /** Quantity of `sku` that exceeds the backend's capacity (503 insufficient_resources). */
  overCapacityQuantity: number;
  /** A valid payload (manifest bytes) for a single service named `service`; undefined = none needed. */
  payload?(service: string): Uint8Array;
  /** A payload whose image comes from a registry outside the allowlist. */
  disallowedImagePayload?(service: string): Uint8Array;
  /** The backend implements restart and update (else both answer 501 `unsupported`). */
  maintenance?: boolean;
  /** How long a provision may take to reach its callback (default 20 s). */
  provisionTimeoutMs?: number;
  close(): Promise<void>;
}

export interface ProvisionRequestOptions {
  lease?: string;
  operationId?: string;
  items?: unknown[];
  lifecycle?: string | null;
  payload?: Uint8Array;
}

const TENANT = "manifest1tenantcontractsuite000000000000000";
const PROVIDER = "01234567-89ab-7def-8123-456789abcdef";

export function runBackendContractSuite(label: string, start: () => Promise<BackendUnderTest>): void {
  describe(`backend contract: ${label}`, () => {
    let b: BackendUnderTest;
    let rx: Receiver;
    let c: SignedClient;
    const timeout = () => b.provisionTimeoutMs ?? 20_000;

    before(async () => {
      b = await start();
      rx = await startReceiver(b.secret);
      c = signedClient(b.baseUrl, b.secret);
    });
    after(async () => {
      await rx?.close();
      await b?.close();
    });

    const callbackUrl = (op: string) => `${rx.url}/callbacks/provision?operation_id=${op}`;
    const lifecycleUrl = (op: string) => `${rx.url}/callbacks/provision?lifecycle_id=${op}`;
    const provisionBody = (o: ProvisionRequestOptions = {}) => {
      const lease = o.lease ?? randomUUID();
      const op = o.operationId ?? randomUUID();
      const payload = o.payload ?? b.payload?.("app");
      const body: Record<string, unknown> = {
        lease_uuid: lease,
        tenant: TENANT,
        provider_uuid: PROVIDER,
        items: o.items ?? [{ sku: b.sku, quantity: 1, service_name: "app" }],
        callback_url: callbackUrl(op),
      };
      if (o.lifecycle !== null) body.lifecycle_callback_url = o.lifecycle ?? lifecycleUrl(op);
      if (payload !== undefined) body.payload = Buffer.from(payload).toString("base64");
      return { lease, op, body };
    };
    const provisionReady = async (o: ProvisionRequestOptions = {}) => {
      const p = provisionBody(o);
      const res = await c.post("/provision", p.body);
      assert.equal(res.status, 202, res.text);
      await rx.waitFor((r) => r.effects.includes(`operation:${p.lease}:success`), timeout());
      return p;
    };
    const codeOf = (res: { json: unknown }) => (res.json as { code?: string } | undefined)?.code;

    describe("unauthenticated surface and identity header", () => {
      it("GET /health answers 200 healthy with exactly one storage id header", async () => {
        const res = await fetch(`${b.baseUrl}/health`);
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { status: "healthy" });
        assert.equal(res.headers.get("x-fred-backend-storage-id"), b.storageId);
      });
      it("GET /stats reports the routing fields as numbers", async () => {
        const res = await fetch(`${b.baseUrl}/stats`);
        assert.equal(res.status, 200);
        const s = (await res.json()) as Record<string, unknown>;
        for (const f of [
          "total_cpu_cores",
          "allocated_cpu_cores",
          "total_memory_mb",
          "allocated_memory_mb",
        ]) {
          assert.equal(typeof s[f], "number", f);
        }
        for (const f of ["total_disk_mb", "allocated_disk_mb", "available_cpu_cores"]) {
          assert.equal(typeof s[f], "number", f);
        }
        assert.equal(typeof s.disk_withheld, "boolean");
        // The registry allowlist admission applies: a list of domains, or null for none kept.
        const registries = s.allowed_registries;
        assert.ok(
          registries === null ||
            (Array.isArray(registries) && registries.every((r) => typeof r === "string" && r !== "")),
          `allowed_registries: ${JSON.stringify(registries)}`,
        );
      });
      it("GET /metrics serves Prometheus text", async () => {
        const res = await fetch(`${b.baseUrl}/metrics`);
        assert.equal(res.status, 200);
        assert.match(await res.text(), /# TYPE /);
      });
      it("an unknown route is a 404 envelope that still carries the identity header", async () => {
        const res = await c.get("/no/such/route");
        assert.equal(res.status, 404);
        assert.equal(typeof (res.json as { error?: unknown }).error, "string");
        assert.equal(res.headers.get("x-fred-backend-storage-id"), b.storageId);
      });
    });

    describe("HMAC", () => {
      for (const tamper of ["missing", "body", "uri", "stale", "future", "wrong-key"] as const) {
        it(`refuses a request with a ${tamper} signature as 401 and changes nothing`, async () => {
          const p = provisionBody();
          const res = await c.post("/provision", p.body, { tamper });
          assert.equal(res.status, 401, res.text);
          assert.equal(typeof (res.json as { error?: unknown }).error, "string");
          const after = await c.get(`/provisions/${p.lease}`);
          assert.equal(after.status, 404);
        });
      }
      it("refuses a tampered GET as 401", async () => {
        assert.equal((await c.get("/provisions", { tamper: "uri" })).status, 401);
        assert.equal((await c.get("/provisions", { tamper: "missing" })).status, 401);
      });
      it("checks the signature before parsing: a tampered invalid body is 401, not 400", async () => {
        const res = await c.post("/provision", undefined, { raw: "{not json", tamper: "body" });
        assert.equal(res.status, 401);
      });
      it("accepts the verify-only previous key", async (t) => {
        if (b.previousSecret === undefined) return t.skip("backend started without a previous key");
        const res = await c.get("/retentions", { secret: b.previousSecret });
        assert.equal(res.status, 200, res.text);
      });
    });

    describe("storage identity", () => {
      it("serves mutating POSTs under /_fred/storage/{id}/{op}", async () => {
        const p = provisionBody();
        const res = await c.post(`/_fred/storage/${b.storageId}/provision`, p.body);
        assert.equal(res.status, 202, res.text);
        assert.equal(res.headers.get("x-fred-backend-storage-id"), b.storageId);
        await rx.waitFor((r) => r.effects.includes(`operation:${p.lease}:success`), timeout());
      });
      it("refuses another storage id in the path with 409 storage_identity_mismatch", async () => {
        const p = provisionBody();
        const res = await c.post(`/_fred/storage/${randomUUID()}/provision`, p.body);
        assert.equal(res.status, 409);
        assert.equal(codeOf(res), "storage_identity_mismatch");
        assert.equal((await c.get(`/provisions/${p.lease}`)).status, 404);
      });
      it("accepts our id and refuses another in ?backend_storage_id=", async () => {
        const ok = await c.get(`/retentions?backend_storage_id=${b.storageId}`);
        assert.equal(ok.status, 200);
        const bad = await c.get(`/retentions?backend_storage_id=${randomUUID()}`);
        assert.equal(bad.status, 409);
        assert.equal(codeOf(bad), "storage_identity_mismatch");
        const p = provisionBody();
        const post = await c.post(`/provision?backend_storage_id=${randomUUID()}`, p.body);
        assert.equal(post.status, 409);
        assert.equal((await c.get(`/provisions/${p.lease}`)).status, 404);
      });
    });

    describe("provision and the callback", () => {
      it("accepts with 202, delivers one signed success callback, and serves the lease", async () => {
        const p = provisionBody();
        const res = await c.post("/provision", p.body);
        assert.equal(res.status, 202, res.text);
        assert.equal(typeof (res.json as { provision_id?: unknown }).provision_id, "string");
        await rx.waitFor((r) => r.effects.includes(`operation:${p.lease}:success`), timeout());
        const d = rx.deliveries.find((x) => x.body.lease_uuid === p.lease);
        assert.ok(d);
        assert.equal(d.signatureValid, true);
        assert.equal(d.route, "operation");
        assert.equal(d.callbackId, p.op);
        assert.equal(d.body.backend, b.name);
        assert.equal(d.body.backend_storage_id, b.storageId);
        assert.equal("retained" in d.body, false);

        const info = await c.get(`/info/${p.lease}`);
        assert.equal(info.status, 200, info.text);
        assert.equal(typeof (info.json as { host?: unknown }).host, "string");
        const prov = await c.get(`/provisions/${p.lease}`);
        assert.equal(prov.status, 200);
        assert.equal((prov.json as { status: string }).status, "ready");
        assert.deepEqual((prov.json as { terminal_budget?: unknown }).terminal_budget, {
          verdict: "retry",
          consecutive_failures: 0,
        });
        const rel = await c.get(`/releases/${p.lease}`);
        assert.equal(rel.status, 200);
        const releases = rel.json as { version: number; status: string }[];
        assert.equal(releases.length, 1);
        assert.equal(releases[0]?.version, 1);
        assert.equal(releases[0]?.status, "active");
        const logs = await c.get(`/logs/${p.lease}?tail=10`);
        assert.equal(logs.status, 200);
        assert.equal(typeof logs.json, "object");
      });
      it("derives the lifecycle URL when omitted", async () => {
        const p = provisionBody({ lifecycle: null });
        const res = await c.post("/provision", p.body);
        assert.equal(res.status, 202, res.text);
        await rx.waitFor((r) => r.effects.includes(`operation:${p.lease}:success`), timeout());
        assert.equal((await c.post("/deprovision", { lease_uuid: p.lease })).status, 200);
        await rx.waitFor((r) => r.effects.includes(`lifecycle:${p.lease}:deprovisioned`), timeout());
        const d = rx.deliveries.find((x) => x.route === "lifecycle" && x.body.lease_uuid === p.lease);
        assert.equal(d?.callbackId, p.op);
      });
      it("answers a redelivered identical provision with 202 and a new operation with 409 already_provisioned", async () => {
        const p = await provisionReady();
        const again = await c.post("/provision", p.body);
        assert.equal(again.status, 202, again.text);
        const other = provisionBody({ lease: p.lease });
        const res = await c.post("/provision", other.body);
        assert.equal(res.status, 409);
        assert.equal(codeOf(res), "already_provisioned");
      });
      it("refuses a redelivery whose body differs from the admitted one with 409; the admitted request stands", async () => {
        const p = await provisionReady();
        const variants: [string, (x: Record<string, unknown>) => void][] = [
          ["another tenant", (x) => (x.tenant = "manifest1someoneelse")],
          ["another provider", (x) => (x.provider_uuid = "01234567-89ab-7def-8123-000000000000")],
          ["another quantity", (x) => (x.items = [{ sku: b.sku, quantity: 2, service_name: "app" }])],
          ["other items", (x) => (x.items = [{ sku: b.sku, quantity: 1, service_name: "other" }])],
        ];
        for (const [name, mutate] of variants) {
          const body = structuredClone(p.body);
          mutate(body);
          const res = await c.post("/provision", body);
          assert.equal(res.status, 409, `${name}: ${res.text}`);
          assert.equal(typeof (res.json as { error?: unknown }).error, "string");
        }
        const prov = await c.get(`/provisions/${p.lease}`);
        const row = prov.json as { status: string; tenant: string; quantity: number; items: unknown[] };
        assert.equal(row.status, "ready");
        assert.equal(row.tenant, TENANT);
        assert.equal(row.quantity, 1);
        assert.deepEqual(row.items, [{ sku: b.sku, quantity: 1, service_name: "app" }]);
        assert.equal((await c.post("/provision", p.body)).status, 202, "the identical redelivery still acks");
      });
      it("refuses an operation id already used by another lease with 409 and creates nothing", async () => {
        const p = await provisionReady();
        const other = provisionBody({ operationId: p.op });
        const res = await c.post("/provision", other.body);
        assert.equal(res.status, 409, res.text);
        assert.equal(codeOf(res), undefined);
        assert.equal((await c.get(`/provisions/${other.lease}`)).status, 404);
        assert.equal((await c.get(`/provisions/${p.lease}`)).status, 200);
      });
      it("refuses the nil UUID as a lease UUID with 400 everywhere", async () => {
        const nil = "00000000-0000-0000-0000-000000000000";
        const p = provisionBody({ lease: nil });
        const res = await c.post("/provision", p.body);
        assert.equal(res.status, 400, res.text);
        assert.match((res.json as { error: string }).error, /lease_uuid/);
        assert.equal((await c.post("/deprovision", { lease_uuid: nil })).status, 400);
        for (const path of [`/provisions/${nil}`, `/info/${nil}`, `/releases/${nil}`, `/logs/${nil}`]) {
          assert.equal((await c.get(path)).status, 400, path);
        }
        assert.equal((await c.get(`/provisions?lease_uuid=${nil}`)).status, 400);
        const listed = (await c.get("/provisions")).json as { provisions: { lease_uuid: string }[] };
        assert.ok(!listed.provisions.some((r) => r.lease_uuid === nil));
      });
      it("refuses capacity it does not have with 503 insufficient_resources and reserves nothing", async () => {
        const before = (await (await fetch(`${b.baseUrl}/stats`)).json()) as Record<string, number>;
        const p = provisionBody({
          items: [{ sku: b.sku, quantity: b.overCapacityQuantity, service_name: "app" }],
        });
        const res = await c.post("/provision", p.body);
        assert.equal(res.status, 503);
        assert.equal(codeOf(res), "insufficient_resources");
        assert.equal((await c.get(`/provisions/${p.lease}`)).status, 404);
        const afterStats = (await (await fetch(`${b.baseUrl}/stats`)).json()) as Record<string, number>;
        assert.ok(
          (afterStats.allocated_cpu_cores ?? 0) <= (before.allocated_cpu_cores ?? 0),
          "nothing reserved",
        );
      });
      it("refuses an image outside the allowed registries with 400 image_not_allowed", async (t) => {
        if (b.disallowedImagePayload === undefined) return t.skip("backend has no manifest images");
        const p = provisionBody({ payload: b.disallowedImagePayload("app") });
        const res = await c.post("/provision", p.body);
        assert.equal(res.status, 400);
        assert.equal((res.json as { validation_code?: string }).validation_code, "image_not_allowed");
        assert.equal((await c.get(`/provisions/${p.lease}`)).status, 404);
      });
    });

    describe("provision bad input (400, nothing created)", () => {
      const cases: [string, (body: Record<string, unknown>) => void][] = [
        ["missing lease_uuid", (x) => delete x.lease_uuid],
        ["uppercase lease_uuid", (x) => (x.lease_uuid = String(x.lease_uuid).toUpperCase())],
        ["non-uuid provider_uuid", (x) => (x.provider_uuid = "provider")],
        ["missing tenant", (x) => delete x.tenant],
        ["empty items", (x) => (x.items = [])],
        ["zero quantity", (x) => (x.items = [{ sku: (x.items as { sku: string }[])[0]?.sku, quantity: 0 }])],
        ["non-uuid sku", (x) => (x.items = [{ sku: "small", quantity: 1 }])],
        [
          "two unnamed items",
          (x) =>
            (x.items = [
              { sku: b.sku, quantity: 1 },
              { sku: b.sku, quantity: 1 },
            ]),
        ],
        ["callback_url without operation_id", (x) => (x.callback_url = `${rx.url}/callbacks/provision`)],
        [
          "callback_url with two operation_ids",
          (x) => (x.callback_url = `${x.callback_url}&operation_id=${randomUUID()}`),
        ],
        [
          "callback_url with a non-v4 operation_id",
          (x) =>
            (x.callback_url = `${rx.url}/callbacks/provision?operation_id=01234567-89ab-7def-8123-456789abcdef`),
        ],
        ["callback_url not http(s)", (x) => (x.callback_url = "ftp://host/cb?operation_id=" + randomUUID())],
        [
          "lifecycle_callback_url not derived from the operation URL",
          (x) => (x.lifecycle_callback_url = `${rx.url}/callbacks/provision?lifecycle_id=${randomUUID()}`),
        ],
        ["payload not base64", (x) => (x.payload = "***")],
        [
          "payload_hash mismatch",
          (x) => void Object.assign(x, { payload: "e30=", payload_hash: "00".repeat(32) }),
        ],
      ];
      for (const [name, mutate] of cases) {
        it(name, async () => {
          const p = provisionBody();
          mutate(p.body);
          const res = await c.post("/provision", p.body);
          assert.equal(res.status, 400, `${name}: ${res.text}`);
          assert.equal(typeof (res.json as { error?: unknown }).error, "string");
          if (typeof p.body.lease_uuid === "string" && p.body.lease_uuid === p.lease) {
            assert.equal((await c.get(`/provisions/${p.lease}`)).status, 404);
          }
        });
      }
      it("invalid JSON", async () => {
        const res = await c.post("/provision", undefined, { raw: "{not json" });
        assert.equal(res.status, 400);
      });
      it("an oversized body is 413", async () => {
        const res = await c.post("/provision", undefined, { raw: `{"x":"${"a".repeat(9 * 1024 * 1024)}"}` });
        assert.equal(res.status, 413);
      });
    });

    describe("reads", () => {
      it("404 for a lease that is not provisioned on every per-lease read", async () => {
        const lease = randomUUID();
        for (const path of [
          `/info/${lease}`,
          `/provisions/${lease}`,
          `/releases/${lease}`,
          `/logs/${lease}`,
        ]) {
          const res = await c.get(path);
          assert.equal(res.status, 404, path);
          assert.equal(typeof (res.json as { error?: unknown }).error, "string");
        }
      });
      it("400 for a malformed lease UUID on every per-lease read", async () => {
        for (const path of ["/info/nope", "/provisions/nope", "/releases/nope", "/logs/nope"]) {
          assert.equal((await c.get(path)).status, 400, path);
        }
      });
      it("400 for a bad tail", async () => {
        const p = await provisionReady();
        assert.equal((await c.get(`/logs/${p.lease}?tail=-1`)).status, 400);
        assert.equal((await c.get(`/logs/${p.lease}?tail=abc`)).status, 400);
      });
      it("GET /retentions is an empty list, never null", async () => {
        const res = await c.get("/retentions");
        assert.equal(res.status, 200);
        assert.deepEqual(res.json, { retentions: [] });
      });
    });

    describe("GET /provisions pagination", () => {
      it("walks keyset pages with continue and lifecycle_generation on each row", async () => {
        const mine = [await provisionReady(), await provisionReady(), await provisionReady()];
        const seen: { lease_uuid: string; lifecycle_generation?: { kind: string; id?: string } }[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 1000; page++) {
          const res = await c.get(`/provisions?limit=2${cursor ? `&continue=${cursor}` : ""}`);
          assert.equal(res.status, 200, res.text);
          const body = res.json as { provisions: typeof seen; continue?: string };
          assert.ok(body.provisions.length <= 2);
          seen.push(...body.provisions);
          if (body.continue === undefined) break;
          assert.equal(body.continue, body.provisions[body.provisions.length - 1]?.lease_uuid);
          cursor = body.continue;
        }
        const ids = seen.map((r) => r.lease_uuid);
        assert.deepEqual(ids, [...ids].sort());
        assert.equal(new Set(ids).size, ids.length);
        for (const p of mine) {
          const row = seen.find((r) => r.lease_uuid === p.lease);
          assert.deepEqual(row?.lifecycle_generation, { kind: "typed", id: p.op });
        }
        const all = await c.get("/provisions");
        assert.equal((all.json as { provisions: unknown[] }).provisions.length, seen.length);
      });
      it("filters by repeated lease_uuid", async () => {
        const a = await provisionReady();
        const bb = await provisionReady();
        const res = await c.get(
          `/provisions?lease_uuid=${a.lease}&lease_uuid=${bb.lease}&lease_uuid=${randomUUID()}`,
        );
        assert.equal(res.status, 200);
        const ids = (res.json as { provisions: { lease_uuid: string }[] }).provisions.map(
          (r) => r.lease_uuid,
        );
        assert.deepEqual(ids.sort(), [a.lease, bb.lease].sort());
      });
      it("coerces a limit above 5000 and refuses bad parameters with 400", async () => {
        assert.equal((await c.get("/provisions?limit=6000")).status, 200);
        for (const q of [
          "limit=0",
          "limit=-1",
          "limit=abc",
          `continue=${randomUUID()}`,
          "limit=2&continue=nope",
        ]) {
          assert.equal((await c.get(`/provisions?${q}`)).status, 400, q);
        }
        assert.equal((await c.get("/provisions?lease_uuid=nope")).status, 400);
      });
    });

    describe("deprovision, tombstones, other mutations", () => {
      it("deprovision is idempotent, sends deprovisioned with retained=false, and the UUID is never reused", async () => {
        const p = await provisionReady();
        const res = await c.post("/deprovision", { lease_uuid: p.lease });
        assert.equal(res.status, 200);
        assert.deepEqual(res.json, { status: "ok" });
        await rx.waitFor((r) => r.effects.includes(`lifecycle:${p.lease}:deprovisioned`), timeout());
        const d = rx.deliveries.find((x) => x.route === "lifecycle" && x.body.lease_uuid === p.lease);
        assert.equal(d?.body.retained, false);
        assert.equal(d?.body.backend_storage_id, b.storageId);
        assert.equal((await c.post("/deprovision", { lease_uuid: p.lease })).status, 200);
        assert.equal((await c.get(`/info/${p.lease}`)).status, 404);
        const again = provisionBody({ lease: p.lease });
        const refused = await c.post("/provision", again.body);
        assert.equal(refused.status, 409);
      });
      it("refuses a redelivery of the original operation after the close with 409 (lease closed)", async () => {
        const p = await provisionReady();
        assert.equal((await c.post("/deprovision", { lease_uuid: p.lease })).status, 200);
        const closing = await c.post("/provision", p.body);
        assert.equal(closing.status, 409, `while closing: ${closing.text}`);
        assert.equal(codeOf(closing), undefined);
        await rx.waitFor((r) => r.effects.includes(`lifecycle:${p.lease}:deprovisioned`), timeout());
        const res = await c.post("/provision", p.body);
        assert.equal(res.status, 409, res.text);
        assert.equal(codeOf(res), undefined, "the same refusal as for a new operation id");
        const fresh = await c.post("/provision", provisionBody({ lease: p.lease }).body);
        assert.equal(fresh.status, 409);
        assert.deepEqual(res.json, fresh.json);
        assert.equal((await c.get(`/info/${p.lease}`)).status, 404);
        assert.ok(
          !rx.effects.some(
            (e) => e.startsWith(`operation:${p.lease}:`) && e !== `operation:${p.lease}:success`,
          ),
          "no second operation result",
        );
      });
      it("deprovision of an unknown lease is 200 and a bad body is 400", async () => {
        assert.equal((await c.post("/deprovision", { lease_uuid: randomUUID() })).status, 200);
        assert.equal((await c.post("/deprovision", { lease_uuid: "nope" })).status, 400);
        assert.equal((await c.post("/deprovision", {})).status, 400);
      });
      it("reconcile_custom_domain is 204 and validates its body", async () => {
        const p = await provisionReady();
        const ok = await c.post("/reconcile_custom_domain", {
          lease_uuid: p.lease,
          items: [{ sku: b.sku, quantity: 1, service_name: "app" }],
        });
        assert.equal(ok.status, 204);
        assert.equal(
          (await c.post("/reconcile_custom_domain", { lease_uuid: "nope", items: [] })).status,
          400,
        );
      });
      it("restart and update answer 501 unless implemented, else 400 and 404 as any mutation", async () => {
        for (const op of b.maintenance === true ? [] : ["restart", "update"]) {
          const res = await c.post(`/${op}`, { lease_uuid: randomUUID() });
          assert.equal(res.status, 501, op);
          assert.equal(codeOf(res), "unsupported");
        }
        for (const op of b.maintenance === true ? ["restart", "update"] : []) {
          const bad = await c.post(`/${op}`, { lease_uuid: randomUUID() });
          assert.equal(bad.status, 400, op);
          assert.equal((bad.json as { error: string }).error, "maintenance_id is required");
          const unknown = await c.post(`/${op}`, {
            lease_uuid: randomUUID(),
            maintenance_id: randomUUID(),
            callback_url: `${rx.url}/callbacks/provision?lifecycle_id=${randomUUID()}`,
            payload: Buffer.from("{}").toString("base64"),
            admitted_at: "2026-12-01T10:00:00Z",
          });
          assert.equal(unknown.status, 404, op);
        }
      });
      it("restore of a source with no retained data answers a bare 422", async () => {
        const op = randomUUID();
        const res = await c.post("/restore", {
          lease_uuid: randomUUID(),
          from_lease_uuid: randomUUID(),
          tenant: "manifest1contract",
          provider_uuid: randomUUID(),
          items: [{ sku: b.sku, quantity: 1, service_name: "app" }],
          callback_url: callbackUrl(op),
          lifecycle_callback_url: lifecycleUrl(op),
        });
        assert.equal(res.status, 422);
        assert.equal(codeOf(res), undefined);
      });
    });
  });
}
