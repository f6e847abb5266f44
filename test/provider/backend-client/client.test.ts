import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, beforeEach, describe, it } from "node:test";
import { ManualClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { BackendClient, type MutationOutcome } from "../../../src/provider/backend-client/index.ts";
import type { BackendConfig } from "../../../src/provider/config/index.ts";
import { listenLoopback, until } from "../../support/index.ts";
import { backendConfigFor } from "./backend-config.ts";
import { type FakeBackend, startFakeBackend } from "./fake-backend.ts";

const SECRET = "backend-client-test-secret-0123456789";
const SID = "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f";
const LEASE = "0190f3a2-7c1e-7000-8000-000000000001";
const PROVIDER = "0190f3a2-7c1e-7000-8000-0000000000aa";
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";
const OP = "11111111-1111-4111-8111-111111111111";

function backendConfig(url: string, over: Partial<BackendConfig> = {}): BackendConfig {
  return backendConfigFor(url, SECRET, { name: "fake", skus: [SKU], ...over });
}

const provisionRequest = {
  leaseUuid: LEASE,
  tenant: "manifest1tenant",
  providerUuid: PROVIDER,
  items: [{ sku: SKU, quantity: 1, serviceName: "web" }],
  callbackUrl: `http://127.0.0.1:8080/callbacks/provision?operation_id=${OP}`,
  lifecycleCallbackUrl: `http://127.0.0.1:8080/callbacks/provision?lifecycle_id=${OP}`,
  payload: Buffer.from("{}"),
  payloadHash: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
};

let fake: FakeBackend;
const clients: BackendClient[] = [];
async function client(
  over: Partial<BackendConfig> = {},
  storageId: string | null = SID,
  clock?: ManualClock,
) {
  const c = await BackendClient.create({
    backend: backendConfig(fake.url, over),
    secret: SECRET,
    storageId: storageId ?? undefined,
    ...(clock ? { clock } : {}),
  });
  clients.push(c);
  return c;
}

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
});
after(async () => {
  for (const c of clients) await c.close();
  await fake.close();
});
beforeEach(() => {
  fake.headerMode = "ok";
  fake.script.clear();
  fake.requests.length = 0;
  fake.provisions = [];
  fake.retentions = [];
});

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(isFredError(err), String(err));
    return err.code;
  }
  assert.fail("expected a FredError");
}

describe("backend client: requests", () => {
  it("provision goes to the pinned storage path, signed, with the contract body", async () => {
    const c = await client();
    const out = await c.provision(provisionRequest);
    assert.deepEqual(out, { kind: "accepted", status: 202, body: { provision_id: LEASE } });
    const req = fake.requests[0]!;
    assert.equal(req.url, `/_fred/storage/${SID}/provision?backend_storage_id=${SID}`);
    assert.equal(req.signatureValid, true);
    assert.deepEqual(JSON.parse(req.body), {
      lease_uuid: LEASE,
      tenant: "manifest1tenant",
      provider_uuid: PROVIDER,
      items: [{ sku: SKU, quantity: 1, service_name: "web" }],
      callback_url: provisionRequest.callbackUrl,
      lifecycle_callback_url: provisionRequest.lifecycleCallbackUrl,
      payload: "e30=",
      payload_hash: provisionRequest.payloadHash,
    });
  });

  it("reads carry backend_storage_id with sorted query keys and a valid signature", async () => {
    const c = await client();
    fake.provisions = [LEASE];
    const inv = await c.inventory();
    assert.deepEqual(
      inv.provisions.map((p) => p.leaseUuid),
      [LEASE],
    );
    assert.equal(fake.requests[0]!.url, `/provisions?backend_storage_id=${SID}&limit=1000`);
    assert.ok(fake.requests.every((r) => r.signatureValid));
  });

  it("walks every inventory page and reports the storage identity", async () => {
    const leases = Array.from(
      { length: 2500 },
      (_, i) => `0190f3a2-7c1e-7000-8000-${String(i).padStart(12, "0")}`,
    );
    fake.provisions = leases;
    fake.retentions = [LEASE];
    const c = await client({}, null);
    let pages = 0;
    const inv = await c.inventory(undefined, () => pages++);
    assert.equal(pages, 4, "three provisions pages and one retentions page, each reported as it arrives");
    assert.equal(inv.provisions.length, 2500);
    assert.equal(inv.storageId, SID);
    assert.deepEqual(inv.retentions, [LEASE]);
    assert.equal(fake.requests.filter((r) => r.url.startsWith("/provisions")).length, 3);
    assert.ok(!fake.requests[0]!.url.includes("backend_storage_id"), "unpinned reads carry no storage id");
  });

  it("a failure mid-walk fails the whole inventory", async () => {
    fake.provisions = Array.from(
      { length: 1500 },
      (_, i) => `0190f3a2-7c1e-7000-8000-${String(i).padStart(12, "0")}`,
    );
    const c = await client();
    fake.script.set("provisions", [
      { status: 200, body: { provisions: [{ lease_uuid: LEASE, status: "ready" }], continue: LEASE } },
      { status: 500, body: { error: "boom" } },
    ]);
    assert.equal(await code(c.inventory()), "ERR_BACKEND_STATUS");
  });

  it("stats and info decode strictly; 404 info is 'not provisioned'", async () => {
    const c = await client();
    // Memory is kept (the dashboard shows it); disk is absent here, so it is not made up.
    assert.deepEqual(await c.stats(), {
      totalCpuCores: 8,
      allocatedCpuCores: 2,
      memoryMb: { allocated: 0, total: 1024 },
      diskWithheld: false,
    });
    assert.equal(await c.info(LEASE), undefined);
    fake.script.set("info", [
      { status: 200, body: { host: "h", ports: { "80/tcp": {} }, metadata: { a: "b" } } },
    ]);
    assert.deepEqual(await c.info(LEASE), { host: "h", ports: { "80/tcp": {} }, metadata: { a: "b" } });
    fake.script.set("info", [{ status: 200, body: { host: 7 } }]);
    assert.equal(await code(c.info(LEASE)), "ERR_BACKEND_MALFORMED");
    fake.script.set("stats", [{ status: 200, body: '{"total_cpu_cores":8,"total_cpu_cores":9}' }]);
    assert.equal(await code(c.stats()), "ERR_BACKEND_MALFORMED");
    fake.script.set("provisions", [{ status: 200, body: { provisions: null } }]);
    assert.equal(await code(c.inventory()), "ERR_BACKEND_MALFORMED");
  });
});

describe("backend client: the other contract operations", () => {
  it("restart, update, restore and reconcile_custom_domain use their pinned paths and expected statuses", async () => {
    const c = await client();
    fake.script.set("restart", [{ status: 202, body: { status: "restarting" } }]);
    fake.script.set("update", [{ status: 202, body: { status: "updating" } }]);
    fake.script.set("restore", [{ status: 422, body: { error: "no retained data" } }]);
    fake.script.set("reconcile_custom_domain", [{ status: 204 }]);
    const command = {
      leaseUuid: LEASE,
      maintenanceId: "6ba7b811-9dad-41d1-80b4-00c04fd430c8",
      callbackUrl: provisionRequest.callbackUrl,
      admittedAt: "2024-01-16T14:00:00.000001Z",
    };
    assert.equal((await c.restart(command)).kind, "accepted");
    const update = await c.update({ ...command, payload: Buffer.from("{}") });
    assert.equal(update.kind, "accepted");
    const restore = await c.restore({ ...provisionRequest, fromLeaseUuid: PROVIDER });
    assert.deepEqual(restore, { kind: "refused", status: 422, error: "no retained data" });
    assert.equal((await c.reconcileCustomDomain(LEASE, provisionRequest.items)).kind, "accepted");
    assert.deepEqual(
      fake.requests.map((r) => r.url.split("?")[0]),
      ["restart", "update", "restore", "reconcile_custom_domain"].map((op) => `/_fred/storage/${SID}/${op}`),
    );
    assert.equal(JSON.parse(fake.requests[1]!.body).payload, "e30=");
    const sent = JSON.parse(fake.requests[0]!.body);
    assert.equal(sent.maintenance_id, command.maintenanceId);
    assert.equal(sent.admitted_at, command.admittedAt);
    assert.equal(sent.callback_url, command.callbackUrl);
    assert.equal(JSON.parse(fake.requests[2]!.body).from_lease_uuid, PROVIDER);
    assert.ok(fake.requests.every((r) => r.signatureValid));
  });

  it("restart and update: 404 and 409 maintenance_expired are definite refusals (provision keeps them ambiguous)", async () => {
    const c = await client();
    const command = {
      leaseUuid: LEASE,
      maintenanceId: "6ba7b811-9dad-41d1-80b4-00c04fd430c8",
      callbackUrl: provisionRequest.callbackUrl,
      admittedAt: "2024-01-16T14:00:00.000001Z",
    };
    fake.script.set("restart", [
      { status: 404, body: { error: "lease not provisioned" } },
      { status: 409, body: { error: "too old", code: "maintenance_expired" } },
      { status: 409, body: { error: "x", code: "something_else" } },
    ]);
    assert.deepEqual(await c.restart(command), {
      kind: "refused",
      status: 404,
      error: "lease not provisioned",
    });
    assert.deepEqual(await c.restart(command), {
      kind: "refused",
      status: 409,
      error: "too old",
      code: "maintenance_expired",
    });
    assert.equal((await c.restart(command)).kind, "ambiguous");
    fake.script.set("provision", [{ status: 404, body: { error: "no" } }]);
    assert.equal((await c.provision(provisionRequest)).kind, "ambiguous");
  });

  it("reads logs, releases and provision diagnostics; 404 is undefined; bad shapes are malformed", async () => {
    const c = await client();
    assert.equal(await c.logs(LEASE, 50), undefined);
    assert.equal(fake.requests[0]!.url, `/logs/${LEASE}?backend_storage_id=${SID}&tail=50`);
    fake.script.set("logs", [
      { status: 200, body: { "web/0": "hello\n" } },
      { status: 200, body: { "web/0": 5 } },
    ]);
    assert.deepEqual(await c.logs(LEASE, 10), { "web/0": "hello\n" });
    assert.equal(await code(c.logs(LEASE, 10)), "ERR_BACKEND_MALFORMED");
    fake.script.set("releases", [
      { status: 200, body: [{ version: 1, status: "active" }] },
      { status: 200, body: {} },
    ]);
    assert.deepEqual(await c.releases(LEASE), [{ version: 1, status: "active" }]);
    assert.equal(await code(c.releases(LEASE)), "ERR_BACKEND_MALFORMED");
    fake.script.set("provision-info", [
      { status: 200, body: { lease_uuid: LEASE, status: "failed", fail_count: 3 } },
    ]);
    assert.deepEqual(await c.provisionInfo(LEASE), { lease_uuid: LEASE, status: "failed", fail_count: 3 });
    assert.equal(await c.provisionInfo(LEASE), undefined);
    assert.equal(await c.healthy(), true);
    fake.script.set("health", [{ status: 503, body: { status: "unhealthy" } }]);
    assert.equal(await c.healthy(), false);
  });
});

describe("backend client: storage identity", () => {
  for (const mode of ["missing", "duplicate", "wrong"] as const) {
    it(`a ${mode} X-Fred-Backend-Storage-ID makes a provision ambiguous and a read fail`, async () => {
      const c = await client();
      fake.headerMode = mode;
      const out = await c.provision(provisionRequest);
      assert.equal(out.kind, "ambiguous");
      assert.equal(out.kind === "ambiguous" && out.reason, "identity");
      assert.equal(await code(c.stats()), "ERR_BACKEND_IDENTITY");
    });
  }

  it("mutations are never sent before the storage ID is pinned, nor to a fenced backend", async () => {
    const unpinned = await client({}, null);
    assert.deepEqual((await unpinned.provision(provisionRequest)).kind, "not-sent");
    const fenced = await client({ fenced: true });
    const out = await fenced.deprovision(LEASE);
    assert.equal(out.kind === "not-sent" && out.reason, "fenced");
    assert.equal(await code(fenced.stats()), "ERR_BACKEND_FENCED");
    assert.equal(fake.requests.length, 0);
  });
});

describe("backend client: outcome classification over HTTP", () => {
  const cases: [string, { status: number; body?: string | object }, Partial<MutationOutcome>][] = [
    [
      "400 validation envelope → refused",
      { status: 400, body: { error: "unknown SKU", validation_code: "unknown_sku" } },
      { kind: "refused", status: 400, error: "unknown SKU", validationCode: "unknown_sku" },
    ],
    [
      "409 without code → refused (invalid state)",
      { status: 409, body: { error: "invalid state" } },
      { kind: "refused", status: 409 },
    ],
    ["409 empty body → refused", { status: 409 }, { kind: "refused", status: 409, error: "" }],
    [
      "409 already_provisioned → ambiguous",
      { status: 409, body: { error: "lease is already provisioned", code: "already_provisioned" } },
      { kind: "ambiguous", reason: "already-provisioned" },
    ],
    [
      "503 insufficient_resources → refused",
      { status: 503, body: { error: "insufficient resources", code: "insufficient_resources" } },
      { kind: "refused", status: 503, code: "insufficient_resources" },
    ],
    [
      "503 without a recognised code → ambiguous",
      { status: 503, body: { error: "busy" } },
      { kind: "ambiguous", reason: "unknown-code" },
    ],
    [
      "500 → ambiguous",
      { status: 500, body: { error: "panic" } },
      { kind: "ambiguous", reason: "server-error" },
    ],
    [
      "400 non-envelope → ambiguous",
      { status: 400, body: "not json" },
      { kind: "ambiguous", reason: "malformed" },
    ],
    [
      "400 unknown validation code → ambiguous",
      { status: 400, body: { error: "x", validation_code: "quota" } },
      { kind: "ambiguous", reason: "unknown-code" },
    ],
    [
      "200 instead of 202 → ambiguous",
      { status: 200, body: {} },
      { kind: "ambiguous", reason: "unexpected-status" },
    ],
    ["401 → ambiguous", { status: 401, body: { error: "invalid signature" } }, { kind: "ambiguous" }],
  ];
  for (const [name, response, expected] of cases) {
    it(name, async () => {
      const c = await client();
      fake.script.set("provision", [response]);
      const out = await c.provision(provisionRequest);
      for (const [k, v] of Object.entries(expected))
        assert.deepEqual((out as Record<string, unknown>)[k], v, k);
    });
  }

  it("a request the backend does not answer in time is ambiguous (clock-driven timeout)", async () => {
    const clock = new ManualClock(Date.now());
    const c = await client({ timeoutMs: 30_000 }, SID, clock);
    let release!: () => void;
    fake.script.set("provision", [{ status: 202, body: {}, hold: new Promise<void>((r) => (release = r)) }]);
    const arrived = fake.nextRequest();
    const pending = c.provision(provisionRequest);
    await arrived;
    clock.advance(30_000);
    const out = await pending;
    release();
    assert.equal(out.kind === "ambiguous" && out.reason, "timeout");
  });

  it("a transport failure is ambiguous", async () => {
    // The connection is made and the request read before it breaks: it may have been acted on.
    const server = createServer((socket) => socket.once("data", () => socket.destroy()));
    const { url } = await listenLoopback(server);
    try {
      const c = await BackendClient.create({ backend: backendConfig(url), secret: SECRET, storageId: SID });
      clients.push(c);
      const out = await c.provision(provisionRequest);
      assert.equal(out.kind === "ambiguous" && out.reason, "transport");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a refused connection delivered nothing: not sent", async () => {
    const c = await BackendClient.create({
      backend: backendConfig("http://127.0.0.1:1"),
      secret: SECRET,
      storageId: SID,
    });
    clients.push(c);
    const out = await c.provision(provisionRequest);
    assert.equal(out.kind === "not-sent" && out.reason, "connect-refused");
  });

  it("a backend socket with no file (a co-located backend that is not running) delivered nothing: not sent", async () => {
    const c = await BackendClient.create({
      backend: backendConfig("unix:/nonexistent-fred-test-dir/backend.sock"),
      secret: SECRET,
      storageId: SID,
    });
    clients.push(c);
    const out = await c.provision(provisionRequest);
    assert.equal(out.kind === "not-sent" && out.reason, "connect-refused", JSON.stringify(out));
  });

  it("an oversized inventory page is refused at the cap", async () => {
    const c = await client();
    const huge = { provisions: [{ lease_uuid: LEASE, status: "x".repeat(9 * 1024 * 1024) }] };
    fake.script.set("provisions", [{ status: 200, body: huge }]);
    assert.equal(await code(c.inventory()), "ERR_BACKEND_TOO_LARGE");
  });
});

describe("backend client: circuit breaker", () => {
  it("opens after 5 consecutive failures; then nothing is sent", async () => {
    const c = await client();
    fake.script.set(
      "provision",
      Array.from({ length: 5 }, () => ({ status: 500, body: { error: "down" } })),
    );
    for (let i = 0; i < 5; i++) assert.equal((await c.provision(provisionRequest)).kind, "ambiguous");
    const out = await c.provision(provisionRequest);
    assert.equal(out.kind === "not-sent" && out.reason, "circuit-open");
    assert.equal(fake.requests.length, 5);
    assert.equal(await code(c.stats()), "ERR_BACKEND_CIRCUIT_OPEN");
  });

  it("half-open after its delay: a failed trial re-opens it, a good one closes it", async () => {
    // cockatiel times the half-open delay with the wall clock (not our Clock), so this
    // test uses a short real delay and polls for the trial with a deadline.
    const c = await BackendClient.create({
      backend: backendConfig(fake.url),
      secret: SECRET,
      storageId: SID,
      halfOpenAfterMs: 150,
    });
    clients.push(c);
    fake.script.set(
      "provision",
      Array.from({ length: 6 }, () => ({ status: 500, body: { error: "down" } })),
    );
    for (let i = 0; i < 5; i++) await c.provision(provisionRequest);
    assert.equal(c.circuitState, "open");
    const trial = () =>
      until(
        async () => {
          const out = await c.provision(provisionRequest);
          return out.kind === "not-sent" && out.reason === "circuit-open" ? undefined : out;
        },
        "the breaker to let a trial request through",
        10_000,
      );
    assert.equal((await trial()).kind, "ambiguous", "the trial met the sixth 500");
    assert.equal(fake.requests.length, 6);
    assert.equal(c.circuitState, "open", "a failed trial opens it again");
    assert.equal((await trial()).kind, "accepted", "the next trial succeeds");
    assert.equal(c.circuitState, "closed");
    assert.equal((await c.provision(provisionRequest)).kind, "accepted", "and requests flow again");
    assert.equal(fake.requests.length, 8);
  });

  it("domain refusals do not count toward it", async () => {
    const c = await client();
    fake.script.set(
      "provision",
      Array.from({ length: 8 }, () => ({ status: 409, body: { error: "invalid state" } })),
    );
    for (let i = 0; i < 8; i++) assert.equal((await c.provision(provisionRequest)).kind, "refused");
    assert.equal((await c.provision(provisionRequest)).kind, "accepted");
    assert.equal(fake.requests.length, 9);
  });
});
