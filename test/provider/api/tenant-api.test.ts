import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { MsgCreateLease, MsgCreateLeaseResponse } from "../../../src/chain/proto/index.ts";
import { until } from "../../support/index.ts";
import { mockSkus, Stack, sha256 } from "../e2e/stack.ts";
import { keplrAccessToken } from "./keplr-token.ts";
import { type Answer, call, envelope, highS, TenantKey, tampered } from "./tenant-client.ts";
import { type HttpRefusal, WsClient } from "./ws-client.ts";

/**
 * The tenant API over real HTTP against real processes: a devnet, two mock backends and
 * providerd. mock-1 serves docker-small/medium and takes every lease at once; mock-2
 * serves docker-large and takes 30 minutes, so its leases stay PENDING with an
 * unresolved attempt. Every endpoint is driven through each documented code.
 */
const stack = new Stack();
let tenant1: TenantKey;
let tenant2: TenantKey;
const trackerPath = () => join(stack.dir, "tokens.db");

const MANIFEST = Buffer.from(
  JSON.stringify({ image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } }),
);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

before(async () => {
  await stack.start(
    (s) => [
      {
        MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-small"), s.sku("docker-medium")),
        MOCK_BACKEND_DELAY: "0s",
      },
      { MOCK_BACKEND_SKUS: mockSkus(s.sku("docker-large")), MOCK_BACKEND_DELAY: "30m" },
    ],
    (s) => {
      s.backendOverrides = [
        { skus: [s.sku("docker-small"), s.sku("docker-medium")] },
        { skus: [s.sku("docker-large")] },
      ];
      s.extraConfig = { billing_only_skus: [s.sku("billing-only")], token_tracker_db_path: trackerPath() };
    },
  );
  tenant1 = new TenantKey(stack.account("tenant1").private_key_hex);
  tenant2 = new TenantKey(stack.account("tenant2").private_key_hex);
  await stack.startProviderd();
});

after(async () => {
  await stack.close();
});

async function createLease(sku: string, opts: { metaHash?: Uint8Array; quantity?: bigint } = {}) {
  const res = await stack.tenant.send([
    {
      typeUrl: MsgCreateLease.typeUrl,
      value: MsgCreateLease.fromPartial({
        tenant: stack.tenant.address,
        items: [{ skuUuid: stack.sku(sku), quantity: opts.quantity ?? 1n }],
        metaHash: opts.metaHash ?? new Uint8Array(),
      }),
    },
  ]);
  return MsgCreateLeaseResponse.decode(res.msgResponses[0]!.value).leaseUuid;
}

const get = (path: string, token?: string) => call(stack.api, path, token);
const upload = (
  lease: string,
  token: string | undefined,
  body: Uint8Array,
  headers: Record<string, string> = {},
) =>
  call(stack.api, `/v1/leases/${lease}/data`, token, {
    method: "POST",
    body,
    headers: { "content-type": "application/octet-stream", ...headers },
  });

function expectError(a: Answer, status: number, reason?: string): void {
  assert.equal(a.status, status, a.text);
  const e = envelope(a);
  if (reason !== undefined) assert.equal(e.reason, reason);
  for (const leak of ["SQLITE", "sqlite", "ECONNREFUSED", "backend mock", "stack"]) {
    assert.ok(!e.error.includes(leak), `internal text in ${a.text}`);
  }
}

async function statusOf(lease: string): Promise<Record<string, unknown>> {
  const a = await get(`/v1/leases/${lease}/status`, tenant1.access(lease));
  assert.equal(a.status, 200, a.text);
  return a.body;
}

describe("tenant API (devnet + providerd + mock backends, real HTTP)", () => {
  let manifestLease = "";

  it("a manifest lease goes PENDING → ACTIVE through POST data alone", async () => {
    manifestLease = await createLease("docker-medium", { metaHash: sha256(MANIFEST) });
    const before = await statusOf(manifestLease);
    assert.equal(before.state, "LEASE_STATE_PENDING");
    assert.equal(before.requires_payload, true);
    assert.equal(before.meta_hash_hex, hex(sha256(MANIFEST)));
    assert.equal(before.payload_received, false);
    assert.equal(before.provisioning_started, false);
    assert.equal(before.provision_status, undefined);
    assert.equal(before.tenant, stack.tenant.address);
    assert.equal(before.provider_uuid, stack.keys.provider_uuid);

    const accepted = await upload(
      manifestLease,
      tenant1.payload(manifestLease, hex(sha256(MANIFEST))),
      MANIFEST,
    );
    assert.equal(accepted.status, 202, accepted.text);
    assert.equal(accepted.text, "");
    const active = await until(async () => {
      const s = await statusOf(manifestLease);
      return s.state === "LEASE_STATE_ACTIVE" ? s : undefined;
    }, "lease ACTIVE through the status endpoint");
    assert.equal(active.payload_received, true);
    assert.equal(active.provision_status, "ready");
    assert.equal(active.fail_count, undefined, "fail_count is omitted when zero");
    assert.equal(active.terminal_budget, undefined, "ours, only on request");
    const asked = await get(
      `/v1/leases/${manifestLease}/status?include=terminal_budget`,
      tenant1.access(manifestLease),
    );
    assert.deepEqual(asked.body.terminal_budget, { verdict: "retry", consecutive_failures: 0 });
  });

  it("GET connection: the owner's details, ports as integers, replay refused", async () => {
    const token = tenant1.fresh(manifestLease);
    const a = await get(`/v1/leases/${manifestLease}/connection`, token);
    assert.equal(a.status, 200, a.text);
    assert.equal(a.headers.get("cache-control"), "no-store");
    assert.deepEqual(Object.keys(a.body).sort(), ["connection", "lease_uuid", "provider_uuid", "tenant"]);
    const c = a.body.connection as Record<string, unknown>;
    assert.match(c.host as string, /^mock-[0-9a-f]{8}\.example\.com$/);
    assert.deepEqual(c.ports, { "443/tcp": { host_ip: "0.0.0.0", host_port: 443 } });
    assert.equal(c.protocol, "https");
    assert.equal(c.fqdn, undefined, "no ingress: no fqdn");
    assert.deepEqual(c.instances, [{ instance_index: 0, status: "running" }]);
    expectError(await get(`/v1/leases/${manifestLease}/connection`, token), 401);
    expectError(await get(`/v1/leases/${manifestLease}/connection`, highS(token)), 401);
  });

  it("GET events: ?token= upgrade, a snapshot, then provisioning and ready as they happen", async () => {
    const lease = await createLease("docker-medium", { metaHash: sha256(MANIFEST) });
    const url = `${stack.api.replace(/^http/, "ws")}/v1/leases/${lease}/events?token=${encodeURIComponent(tenant1.access(lease))}`;
    const stream = await new WsClient(url).open();
    const snap = await stream.frame(1);
    assert.deepEqual(
      { type: snap.type, lease_uuid: snap.lease_uuid, status: snap.status, state: snap.state },
      { type: "snapshot", lease_uuid: lease, status: "unknown", state: "LEASE_STATE_PENDING" },
    );
    const accepted = await upload(lease, tenant1.payload(lease, hex(sha256(MANIFEST))), MANIFEST);
    assert.equal(accepted.status, 202);
    const provisioning = await stream.frame(2);
    const ready = await stream.frame(3);
    assert.equal(provisioning.status, "provisioning");
    assert.equal(ready.status, "ready");
    assert.ok((ready.seq as number) > (provisioning.seq as number));
    assert.ok((provisioning.seq as number) > (snap.seq as number));
    stream.close();
    const refused = await new WsClient(url.replace(/token=[^&]*/, "token=nope")).open().catch((e) => e);
    assert.equal((refused as HttpRefusal).status, 401);
  });

  it("GET connection of a two-instance lease lists both instances", async () => {
    const lease = await createLease("docker-small", { quantity: 2n });
    await until(async () => {
      const s = await statusOf(lease);
      return s.state === "LEASE_STATE_ACTIVE" && s.provision_status === "ready";
    }, "two-instance lease ACTIVE and ready through the API");
    const a = await get(`/v1/leases/${lease}/connection`, tenant1.fresh(lease));
    assert.equal(a.status, 200, a.text);
    const c = a.body.connection as { instances: { instance_index: number }[] };
    assert.deepEqual(
      c.instances.map((i) => i.instance_index),
      [0, 1],
    );
  });

  it("GET logs: default and explicit tail, every refusal", async () => {
    const token = tenant1.access(manifestLease);
    const a = await get(`/v1/leases/${manifestLease}/logs`, token);
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(Object.keys(a.body).sort(), ["lease_uuid", "logs", "provider_uuid", "tenant"]);
    const logs = a.body.logs as Record<string, string>;
    assert.ok(Object.keys(logs).length > 0 && Object.keys(logs).every((k) => /^[^/]+\/\d+$/.test(k)));
    assert.ok(Object.values(logs).every((t) => typeof t === "string" && t.length > 0));
    const one = await get(`/v1/leases/${manifestLease}/logs?tail=1`, token);
    assert.equal(one.status, 200);
    assert.ok(
      Object.values(one.body.logs as Record<string, string>).every((t) => t.split("\n").length === 2),
    );
    for (const bad of ["0", "-1", "10001", "abc", "1.5"]) {
      expectError(await get(`/v1/leases/${manifestLease}/logs?tail=${bad}`, token), 400);
    }
    assert.equal((await get(`/v1/leases/${manifestLease}/logs?tail=10000`, token)).status, 200);
  });

  it("GET provision and GET releases of a ready lease", async () => {
    const token = tenant1.access(manifestLease);
    const p = await get(`/v1/leases/${manifestLease}/provision`, token);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body, {
      lease_uuid: manifestLease,
      tenant: stack.tenant.address,
      provider_uuid: stack.keys.provider_uuid,
      status: "ready",
      fail_count: 0,
    });
    const asked = await get(`/v1/leases/${manifestLease}/provision?include=terminal_budget`, token);
    assert.deepEqual(asked.body.terminal_budget, { verdict: "retry", consecutive_failures: 0 });
    const r = await get(`/v1/leases/${manifestLease}/releases`, token);
    assert.equal(r.status, 200, r.text);
    const releases = r.body.releases as Record<string, unknown>[];
    assert.equal(releases.length, 1);
    assert.equal(releases[0]!.version, 1);
    assert.equal(releases[0]!.status, "active");
    assert.equal(Buffer.from(releases[0]!.manifest as string, "base64").toString(), MANIFEST.toString());
  });

  it("authentication: expired, future, wrong lease, tampered, other tenant, high-S, Keplr", async () => {
    const path = `/v1/leases/${manifestLease}/status`;
    const now = Math.floor(Date.now() / 1000);
    expectError(await get(path), 401);
    expectError(await call(stack.api, path, undefined, { headers: { authorization: "Basic abc" } }), 401);
    expectError(await get(path, tenant1.access(manifestLease, now - 31)), 401);
    expectError(await get(path, tenant1.access(manifestLease, now + 60)), 401);
    const other = await createLease("docker-small");
    expectError(await get(path, tenant1.access(other)), 401);
    expectError(await get(path, tampered(tenant1.access(manifestLease), "timestamp", now - 1)), 401);
    expectError(
      await get(path, tampered(tenant1.access(manifestLease), "tenant", stack.account("tenant2").address)),
      401,
    );
    expectError(await get(path, "not base64!"), 401);
    expectError(await get(path, tenant1.payload(manifestLease, hex(sha256(MANIFEST)))), 401);
    expectError(await get(path, tenant2.access(manifestLease)), 403);
    expectError(await get(`${path}?token=${encodeURIComponent(tenant1.access(manifestLease))}`), 401);
    assert.equal((await get(path, highS(tenant1.access(manifestLease)))).status, 200);
    const keplr = keplrAccessToken(stack.account("tenant1").mnemonic, manifestLease, now);
    assert.equal((await get(path, keplr)).status, 200);
    expectError(await get("/v1/leases/not-a-uuid/status", tenant1.access(manifestLease)), 400);
    const upper = manifestLease.toUpperCase();
    expectError(await get(`/v1/leases/${upper}/status`, tenant1.access(upper)), 400);
    const unknown = "0190f3a2-7c1e-7000-8000-00000000dead";
    expectError(await get(`/v1/leases/${unknown}/status`, tenant1.access(unknown)), 404);
  });

  it("POST data: every documented refusal, nothing stored by any of them", async () => {
    const hashHex = hex(sha256(MANIFEST));
    const pending = await createLease("docker-large", { metaHash: sha256(MANIFEST) });
    const payload = (lease = pending) => tenant1.payload(lease, hashHex);
    expectError(await upload("nope", payload(), MANIFEST), 400);
    expectError(await upload(pending, undefined, MANIFEST), 401);
    expectError(await upload(pending, tenant1.access(pending), MANIFEST), 401);
    expectError(await upload(pending, tenant1.payload(pending, "ab".repeat(32)), MANIFEST), 401);
    expectError(await upload(pending, tenant1.payload(manifestLease, hashHex), MANIFEST), 401);
    expectError(await upload(pending, tenant2.payload(pending, hashHex), MANIFEST), 403);
    const unknown = "0190f3a2-7c1e-7000-8000-00000000beef";
    expectError(await upload(unknown, tenant1.payload(unknown, hashHex), MANIFEST), 404);
    expectError(await upload(manifestLease, payload(manifestLease), MANIFEST), 404);
    expectError(await upload(pending, payload(), new Uint8Array()), 400);
    expectError(await upload(pending, payload(), Buffer.from("{}")), 400);
    expectError(await upload(pending, payload(), Buffer.alloc(1024 * 1024 + 1, 0x20)), 400);
    const noHash = await createLease("docker-large");
    expectError(await upload(noHash, tenant1.payload(noHash, hashHex), MANIFEST), 400);
    const billing = await createLease("billing-only", { metaHash: sha256(MANIFEST) });
    expectError(await upload(billing, payload(billing), MANIFEST), 400, "billing_only");
    await stack.waitState([billing], "LEASE_STATE_ACTIVE");
    expectError(await upload(billing, payload(billing), MANIFEST), 400, "billing_only");
    assert.equal((await statusOf(pending)).payload_received, false, "no refusal stored anything");

    const first = await upload(pending, payload(), MANIFEST, { "content-type": "text/plain" });
    assert.equal(first.status, 202, first.text);
    expectError(await upload(pending, payload(), MANIFEST), 409);
    const after = await until(async () => {
      const s = await statusOf(pending);
      return s.provisioning_started === true ? s : undefined;
    }, "provisioning started on mock-2");
    assert.equal(after.payload_received, true);
    assert.equal(after.state, "LEASE_STATE_PENDING");
  });

  it("a lease with an unresolved attempt: provision answers from the attempted backend, reads need an owner", async () => {
    const lease = await createLease("docker-large");
    const s = await until(async () => {
      const x = await statusOf(lease);
      return x.provision_status === "provisioning" ? x : undefined;
    }, "provision in progress on mock-2");
    assert.equal(s.provisioning_started, true);
    const token = tenant1.access(lease);
    const p = await get(`/v1/leases/${lease}/provision`, token);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.status, "provisioning");
    expectError(await get(`/v1/leases/${lease}/logs`, token), 503);
    expectError(await get(`/v1/leases/${lease}/releases`, token), 503);
    expectError(await get(`/v1/leases/${lease}/connection`, tenant1.fresh(lease)), 404);
  });

  it("a lease never placed here: provision, logs and releases are 404", async () => {
    const lease = await createLease("docker-large", { metaHash: sha256(Buffer.from("never uploaded")) });
    const token = tenant1.access(lease);
    expectError(await get(`/v1/leases/${lease}/provision`, token), 404);
    expectError(await get(`/v1/leases/${lease}/logs`, token), 404);
    expectError(await get(`/v1/leases/${lease}/releases`, token), 404);
    expectError(await get(`/v1/leases/${lease}/connection`, tenant1.fresh(lease)), 404);
    expectError(await get(`/v1/leases/${lease}/provision`, tenant2.access(lease)), 403);
    expectError(await get(`/v1/leases/${lease}/logs`, tenant2.access(lease)), 403);
    expectError(await get(`/v1/leases/${lease}/releases`, tenant2.access(lease)), 403);
  });

  it("connection: a token of another tenant is 403, of another lease 401", async () => {
    expectError(await get(`/v1/leases/${manifestLease}/connection`, tenant2.fresh(manifestLease)), 403);
    const other = await createLease("docker-small");
    expectError(await get(`/v1/leases/${manifestLease}/connection`, tenant1.fresh(other)), 401);
  });

  it("a replay store that cannot answer fails closed with 503", async () => {
    const locker = new Database(trackerPath());
    try {
      locker.exec("BEGIN IMMEDIATE");
      expectError(await get(`/v1/leases/${manifestLease}/connection`, tenant1.fresh(manifestLease)), 503);
      assert.equal(
        (await get(`/v1/leases/${manifestLease}/status`, tenant1.access(manifestLease))).status,
        200,
      );
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }
    assert.equal(
      (await get(`/v1/leases/${manifestLease}/connection`, tenant1.fresh(manifestLease))).status,
      200,
    );
  });

  it("an owner that cannot be reached is 500 on reads; status still answers without it", async () => {
    await stack.stopMock(0);
    try {
      const token = tenant1.access(manifestLease);
      expectError(await get(`/v1/leases/${manifestLease}/connection`, tenant1.fresh(manifestLease)), 500);
      expectError(await get(`/v1/leases/${manifestLease}/logs`, token), 500);
      expectError(await get(`/v1/leases/${manifestLease}/releases`, token), 500);
      expectError(await get(`/v1/leases/${manifestLease}/provision`, token), 500);
      // Status reuses the backend's answer for up to one chain-read TTL (1 s), then drops it.
      const s = await until(async () => {
        const now = await statusOf(manifestLease);
        return now.provision_status === undefined ? now : undefined;
      }, "status without the unreachable backend's fields");
      assert.equal(s.state, "LEASE_STATE_ACTIVE");
      assert.equal(s.provision_status, undefined);
    } finally {
      await stack.restartMock(0);
    }
  });

  it("a chain that cannot be read is 500, never a cached allow", async () => {
    await stack.devnet.stop();
    const token = tenant1.access(manifestLease);
    await until(
      async () => (await get(`/v1/leases/${manifestLease}/status`, token)).status === 500,
      "chain read 500",
    );
    for (const path of ["status", "provision", "logs", "releases"]) {
      expectError(await get(`/v1/leases/${manifestLease}/${path}`, token), 500);
    }
    expectError(await get(`/v1/leases/${manifestLease}/connection`, tenant1.fresh(manifestLease)), 500);
    expectError(
      await upload(manifestLease, tenant1.payload(manifestLease, hex(sha256(MANIFEST))), MANIFEST),
      500,
    );
  });
});
