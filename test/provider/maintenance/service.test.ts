import assert from "node:assert/strict";
import { join } from "node:path";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { Registry } from "prom-client";
import { KeyedMutex } from "../../../src/core/async/index.ts";
import { payloadAccepted } from "../../../src/core/lease-rules.ts";
import { createLogger } from "../../../src/log.ts";
import { BackendClient } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import { completeMaintenance, promote } from "../../../src/provider/maintenance/completion.ts";
import { DEFAULT_LIMITS, type Limits, sameInstant } from "../../../src/provider/maintenance/journal.ts";
import { Maintenance } from "../../../src/provider/maintenance/service.ts";
import { PayloadStore } from "../../../src/provider/store/index.ts";
import { Harness } from "../api/harness.ts";
import { backendConfigFor } from "../backend-client/backend-config.ts";
import { type FakeBackend, startFakeBackend } from "../backend-client/fake-backend.ts";
import { baseConfig, yamlOf } from "../config/fixtures.ts";

/**
 * The tenant API's restart and update over real HTTP, with the real placement and payload
 * stores, against a scripted backend on a real port (its answers are the contract's). Only
 * the chain is faked, at its port. The real-process tests (devnet, mock backend,
 * providerd) are in restart-update.test.ts.
 */
const SID = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const SECRET = "backend-one-secret-0123456789abcdef";
const LIFECYCLE = "33333333-3333-4333-8333-333333333333";
const MANIFEST = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.27" }));
const MANIFEST_2 = Buffer.from(JSON.stringify({ image: "docker.io/library/nginx:1.28" }));
let n = 0;
const lease = () => `0190f3a2-7c1e-7000-8000-${String(++n).padStart(12, "0")}`;
const key = () => crypto.randomUUID();

let fake: FakeBackend;
let h: Harness;
let m: Maintenance;
let payloads: PayloadStore;
let registry: Registry;
let limits: Limits;
/** maintenance_legacy_idempotency_tenants of the next harness (beforeEach). */
let legacyTenants: () => string[] = () => [otherAddress];

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
});
after(() => fake.close());

beforeEach(async () => {
  fake.script.clear();
  fake.requests.length = 0;
  stamp = 0;
  registry = new Registry();
  limits = { ...DEFAULT_LIMITS };
  h = new Harness();
  const client = await BackendClient.create({
    backend: backendConfigFor(fake.url, SECRET, { name: "one" }),
    secret: SECRET,
    storageId: SID,
  });
  await h.start((hh) => {
    payloads = PayloadStore.open(join(hh.dir, "payloads.db"));
    const config = parseProviderConfig(
      yamlOf({ ...baseConfig(), maintenance_legacy_idempotency_tenants: legacyTenants() }),
    );
    const clients = new Map([["one", client]]);
    m = new Maintenance({
      config,
      store: hh.store,
      fleet: hh.fleet,
      payloads,
      clients,
      chain: { getLease: async (uuid: string) => hh.leases.get(uuid) } as never,
      queue: new KeyedMutex(),
      clock: hh.clock,
      logger: createLogger("test", "silent"),
      registry,
      get limits() {
        return limits;
      },
    });
    m.on("progress", (l, s) => published.push(`${l} ${s}`));
    return { clients, payloads, maintenance: m };
  });
});

afterEach(async () => {
  await h.close();
  payloads.close();
});

const published: string[] = [];

import { addressFromPubkey } from "../../../src/auth/address.ts";
import { compressedPubkey } from "../../../src/auth/keys.ts";
import { OTHER_KEY_HEX } from "../api/harness.ts";
import { TenantKey } from "../api/tenant-client.ts";

const otherKey = new TenantKey(OTHER_KEY_HEX);
const otherAddress = addressFromPubkey(compressedPubkey(otherKey.privateKey));

/** A lease of `tenant` confirmed on backend "one" with the lifecycle id LIFECYCLE. */
function placed(tenant = h.tenant): string {
  const uuid = lease();
  h.leases.set(uuid, { ...h.leases.get(h.lease(uuid))!, tenant });
  const op = crypto.randomUUID();
  h.store.recordAttempt({
    leaseUuid: uuid,
    backend: "one",
    operationId: op,
    kind: "provision",
    createdAt: 1,
  });
  h.store.settleOperation(uuid, op, "success", 2);
  // The lifecycle id is the confirming operation's; tests address it through the placement.
  return uuid;
}

let stamp = 0;
interface Sent {
  status: number;
  body: Record<string, unknown> | undefined;
  headers: Headers;
}

async function post(
  uuid: string,
  op: "restart" | "update",
  o: { key?: string | string[] | null; body?: string | object; as?: TenantKey } = {},
): Promise<Sent> {
  const headers = new Headers();
  // A fresh token each time (the harness has no replay store; legacy keys are per token).
  const token = (o.as ?? h.key).access(uuid, Math.floor(h.clock.now() / 1000) - ++stamp);
  headers.set("authorization", `Bearer ${token}`);
  if (o.key !== null) {
    for (const k of [o.key ?? key()].flat()) headers.append("idempotency-key", k);
  }
  let body: string | undefined;
  if (o.body !== undefined) {
    body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
    headers.set("content-type", "application/json");
  }
  const res = await fetch(`${h.url}/v1/leases/${uuid}/${op}`, { method: "POST", headers, body });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text), headers: res.headers };
}

const update = (manifest: Buffer) => ({ payload: manifest.toString("base64") });
const accepted = (op: "restart" | "update") => ({
  status: 202,
  body: { status: `${op}ing`.replace("eing", "ing") },
});
const sentTo = (op: string) => fake.requests.filter((r) => r.url.includes(`/${op}`));

describe("restart/update: admission and the backend's answers", () => {
  it("restart: journaled, sent with maintenance_id = key, admitted_at and the lifecycle URL; 202", async () => {
    const uuid = placed();
    const k = key();
    fake.script.set("restart", [{ status: 202, body: { status: "restarting" } }]);
    const r = await post(uuid, "restart", { key: k });
    assert.deepEqual({ status: r.status, body: r.body }, accepted("restart"));
    const [sent] = sentTo("restart");
    const body = JSON.parse(sent!.body);
    assert.equal(body.maintenance_id, k);
    assert.match(body.callback_url, /\/callbacks\/provision\?lifecycle_id=[0-9a-f-]{36}$/);
    const c = m.journal.byKey(uuid, k)!;
    assert.ok(sameInstant(c.admittedAtUs, body.admitted_at));
    assert.equal(c.phase, "accepted");
    assert.equal(m.inProgress(uuid), "restarting");
    assert.ok(published.includes(`${uuid} restarting`));
  });

  it("an exact retry joins the accepted command (no second send); another key is 409; a reused key for another command is 409", async () => {
    const uuid = placed();
    const k = key();
    fake.script.set("restart", [{ status: 202, body: { status: "restarting" } }]);
    await post(uuid, "restart", { key: k });
    assert.deepEqual((await post(uuid, "restart", { key: k })).status, 202);
    assert.equal(sentTo("restart").length, 1);
    // Another key while the command runs: the reference's text, our reason beside it.
    assert.deepEqual((await post(uuid, "restart")).body, {
      error: "invalid state for restart",
      code: 409,
      reason: "command_in_progress",
    });
    assert.deepEqual((await post(uuid, "update", { body: update(MANIFEST) })).body, {
      error: "invalid state for update",
      code: 409,
      reason: "command_in_progress",
    });
    const reused = await post(uuid, "update", { key: k, body: update(MANIFEST) });
    assert.equal(reused.status, 409);
    assert.match(String(reused.body?.error), /different command/);
  });

  it("update: the same key with another payload is 409; settled replay returns the stored 202", async () => {
    const uuid = placed();
    const k = key();
    fake.script.set("update", [{ status: 202, body: { status: "updating" } }]);
    assert.deepEqual((await post(uuid, "update", { key: k, body: update(MANIFEST) })).body, {
      status: "updating",
    });
    assert.equal((await post(uuid, "update", { key: k, body: update(MANIFEST_2) })).status, 409);
    const c = m.journal.byKey(uuid, k)!;
    assert.deepEqual(c.payload, MANIFEST, "the manifest is pending desired state");
    assert.equal(await payloads.get(uuid), undefined, "not the payload yet");
    // The exact success completion confirms, promotion writes the payload and settles.
    const promoted = completeMaintenance(
      { store: h.store, clock: h.clock, logger: createLogger("test", "silent") },
      {
        leaseUuid: uuid,
        backend: "one",
        capability: { kind: "lifecycle", id: h.store.placement(uuid)!.lifecycleId! },
        status: "success",
        maintenanceId: k,
        maintenanceAdmittedAt: JSON.parse(sentTo("update")[0]!.body).admitted_at,
      },
    );
    assert.ok(promoted !== undefined);
    assert.equal(
      m.inProgress(uuid),
      "updating",
      "confirmed is still in progress until the payload is written",
    );
    assert.ok(
      await promote(
        { store: h.store, clock: h.clock, logger: createLogger("test", "silent"), payloads },
        promoted,
      ),
    );
    const stored = (await payloads.get(uuid))!;
    assert.deepEqual(stored.payload, MANIFEST);
    assert.ok(stored.promoted);
    assert.ok(payloadAccepted(stored, "00".repeat(32)), "re-provision may use it");
    assert.equal(m.inProgress(uuid), undefined);
    const replay = await post(uuid, "update", { key: k, body: update(MANIFEST) });
    assert.deepEqual({ status: replay.status, body: replay.body }, accepted("update"));
    assert.equal(sentTo("update").length, 1);
  });

  it("a completion that does not match exactly settles nothing (stamp, lifecycle id, backend)", async () => {
    const uuid = placed();
    const k = key();
    fake.script.set("restart", [{ status: 202, body: { status: "restarting" } }]);
    await post(uuid, "restart", { key: k });
    const at = JSON.parse(sentTo("restart")[0]!.body).admitted_at as string;
    const lifecycle = h.store.placement(uuid)!.lifecycleId!;
    const d = { store: h.store, clock: h.clock, logger: createLogger("test", "silent") };
    const cb = { leaseUuid: uuid, backend: "one", status: "success" as const, maintenanceId: k };
    completeMaintenance(d, {
      ...cb,
      capability: { kind: "lifecycle", id: lifecycle },
      maintenanceAdmittedAt: "2020-01-01T00:00:00Z",
    });
    completeMaintenance(d, {
      ...cb,
      capability: { kind: "lifecycle", id: LIFECYCLE },
      maintenanceAdmittedAt: at,
    });
    completeMaintenance(d, {
      ...cb,
      backend: "two",
      capability: { kind: "lifecycle", id: lifecycle },
      maintenanceAdmittedAt: at,
    });
    completeMaintenance(d, { ...cb, capability: { kind: "lifecycle", id: lifecycle } });
    assert.equal(m.inProgress(uuid), "restarting");
    completeMaintenance(d, {
      ...cb,
      capability: { kind: "lifecycle", id: lifecycle },
      maintenanceAdmittedAt: at,
    });
    assert.equal(m.inProgress(uuid), undefined);
    assert.equal(m.journal.byKey(uuid, k)?.outcome, "succeeded");
  });

  it("a failed update settles failed, keeps the old payload, and its exact retry is 409", async () => {
    const uuid = placed();
    await payloads.put(uuid, MANIFEST, 1);
    const k = key();
    fake.script.set("update", [{ status: 202, body: { status: "updating" } }]);
    await post(uuid, "update", { key: k, body: update(MANIFEST_2) });
    const d = { store: h.store, clock: h.clock, logger: createLogger("test", "silent") };
    const at = JSON.parse(sentTo("update")[0]!.body).admitted_at as string;
    const none = completeMaintenance(d, {
      leaseUuid: uuid,
      backend: "one",
      capability: { kind: "lifecycle", id: h.store.placement(uuid)!.lifecycleId! },
      status: "failed",
      maintenanceId: k,
      maintenanceAdmittedAt: at,
    });
    assert.equal(none, undefined);
    assert.deepEqual((await payloads.get(uuid))?.payload, MANIFEST);
    assert.equal((await payloads.get(uuid))?.promoted, false);
    const again = await post(uuid, "update", { key: k, body: update(MANIFEST_2) });
    assert.equal(again.status, 409);
    assert.equal(sentTo("update").length, 1);
  });

  it("backend 409 maintenance_expired → 410 (stored for retries); 400 keeps the curated text; 404; 409", async () => {
    const cases: [object, number, string | undefined, string?][] = [
      [{ status: 409, body: { error: "old", code: "maintenance_expired" } }, 410, "maintenance_expired"],
      [
        { status: 400, body: { error: "image not allowed here", validation_code: "image_not_allowed" } },
        400,
        undefined,
      ],
      [
        { status: 404, body: { error: "lease not provisioned" } },
        404,
        undefined,
        "lease not yet provisioned",
      ],
      [
        { status: 409, body: { error: "already restarting" } },
        409,
        "backend_invalid_state",
        "invalid state for restart",
      ],
    ];
    for (const [script, status, reason, text] of cases) {
      const uuid = placed();
      const k = key();
      fake.script.set("restart", [script as never]);
      const r = await post(uuid, "restart", { key: k });
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body?.reason, reason);
      if (status === 400) assert.equal(r.body?.error, "image not allowed here");
      if (text !== undefined) assert.equal(r.body?.error, text);
      const again = await post(uuid, "restart", { key: k });
      assert.deepEqual(again.body, r.body, "an exact retry replays the stored answer");
      assert.equal(m.inProgress(uuid), undefined);
    }
    assert.equal(sentTo("restart").length, 4);
  });

  it("an ambiguous answer leaves the command pending (503); the exact retry resends the same command", async () => {
    const uuid = placed();
    const k = key();
    fake.script.set("restart", [
      { status: 500, body: { error: "boom" } },
      { status: 202, body: { status: "restarting" } },
    ]);
    const first = await post(uuid, "restart", { key: k });
    assert.equal(first.status, 503);
    assert.equal(first.headers.get("retry-after"), "1");
    assert.equal(m.inProgress(uuid), "restarting");
    assert.equal((await post(uuid, "restart")).status, 409, "another key waits for the pending one");
    assert.equal((await post(uuid, "restart", { key: k })).status, 202);
    const [a, b] = sentTo("restart").map((r) => JSON.parse(r.body));
    assert.deepEqual(a, b, "same maintenance_id and admitted_at");
  });

  it("a backend capacity refusal (503) is not the command's final answer: the exact retry can still succeed", async () => {
    const uuid = placed();
    const k = key();
    fake.script.set("restart", [
      { status: 503, body: { error: "insufficient resources", code: "insufficient_resources" } },
      { status: 202, body: { status: "restarting" } },
    ]);
    const first = await post(uuid, "restart", { key: k });
    assert.equal(first.status, 503);
    assert.equal(first.body?.error, "insufficient resources");
    assert.equal(first.headers.get("retry-after"), "1");
    assert.equal(m.journal.byKey(uuid, k)?.phase, "admitted", "still pending, not settled");
    assert.equal((await post(uuid, "restart")).status, 409, "another key waits for the pending one");
    assert.deepEqual(await post(uuid, "restart", { key: k }).then((r) => [r.status, r.body]), [
      202,
      { status: "restarting" },
    ]);
    const [a, b] = sentTo("restart").map((r) => JSON.parse(r.body));
    assert.deepEqual(a, b, "the same command was sent again");
  });

  it("recovery resends an admitted command of an ACTIVE lease, and settles one of an ended lease without running it", async () => {
    const active = placed();
    const ended = placed();
    fake.script.set("restart", [
      { status: 500, body: { error: "down" } },
      { status: 500, body: { error: "down" } },
    ]);
    await post(active, "restart");
    await post(ended, "restart");
    h.leases.set(ended, { ...h.leases.get(ended)!, state: "LEASE_STATE_CLOSED" });
    fake.script.set("restart", [{ status: 202, body: { status: "restarting" } }]);
    await m.recover(AbortSignal.timeout(10_000));
    assert.equal(m.journal.pending(active)?.phase, "accepted");
    assert.equal(m.journal.pending(ended), undefined);
    assert.equal(sentTo("restart").length, 3, "the ended lease's command was not sent again");
  });

  it("refuses before recording: lease not ACTIVE (409), no confirmed placement (503), provision in progress (409)", async () => {
    const pending = h.lease(lease());
    h.leases.set(pending, { ...h.leases.get(pending)!, state: "LEASE_STATE_PENDING" });
    assert.equal((await post(pending, "restart")).status, 409);
    const unplaced = h.lease(lease());
    assert.equal((await post(unplaced, "restart")).status, 503);
    const busy = placed();
    h.store.recordAttempt({
      leaseUuid: busy,
      backend: "one",
      operationId: key(),
      kind: "provision",
      createdAt: 3,
    });
    assert.equal((await post(busy, "restart")).status, 409);
    const stranger = placed(otherAddress);
    assert.equal((await post(stranger, "restart")).status, 403);
    const missing = lease();
    assert.equal((await post(missing, "restart")).status, 503, "a lease the chain does not return");
    assert.equal(m.journal.totals().commands, 0);
    assert.equal(fake.requests.length, 0);
  });
});

describe("restart/update: bad input changes nothing", () => {
  it("Idempotency-Key missing, repeated or not canonical UUIDv4 → 400; bad lease UUID → 400; no token → 401", async () => {
    const uuid = placed();
    for (const k of [
      null,
      [key(), key()],
      "not-a-uuid",
      key().toUpperCase(),
      "6ba7b811-9dad-11d1-80b4-00c04fd430c8",
    ]) {
      const r = await post(uuid, "restart", { key: k });
      assert.equal(r.status, 400, `${JSON.stringify(k)} → ${JSON.stringify(r.body)}`);
      assert.match(String(r.body?.error), /Idempotency-Key/);
    }
    const bad = await fetch(`${h.url}/v1/leases/NOT-A-UUID/restart`, { method: "POST" });
    assert.equal(bad.status, 400);
    const anon = await fetch(`${h.url}/v1/leases/${uuid}/restart`, {
      method: "POST",
      headers: { "idempotency-key": key() },
    });
    assert.equal(anon.status, 401);
    assert.equal(m.journal.totals().commands, 0);
    assert.equal(fake.requests.length, 0);
  });

  it("update body: not JSON, no payload, not base64, empty, not a manifest → 400", async () => {
    const uuid = placed();
    const bodies = [
      "not json",
      "[]",
      {},
      { payload: 5 },
      { payload: "" },
      { payload: "@@@" },
      { payload: "e30" },
      { payload: Buffer.from("not a manifest").toString("base64") },
      { payload: Buffer.from("{}").toString("base64") },
    ];
    for (const body of bodies) {
      const r = await post(uuid, "update", { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
    }
    const none = await post(uuid, "update");
    assert.equal(none.status, 400);
    assert.equal(m.journal.totals().commands, 0);
    assert.equal(fake.requests.length, 0);
  });
});

describe("restart/update: the shared budget and legacy tenants", () => {
  it("429 maintenance_capacity_reserved (Retry-After: 1) for a tenant with pending work; 503 when exhausted", async () => {
    limits = { ...DEFAULT_LIMITS, commands: 2, reserveCommands: 1 };
    fake.script.set("restart", [
      { status: 202, body: { status: "restarting" } },
      { status: 202, body: { status: "restarting" } },
    ]);
    assert.equal((await post(placed(), "restart")).status, 202);
    const reserved = await post(placed(), "restart");
    assert.equal(reserved.status, 429);
    assert.equal(reserved.body?.reason, "maintenance_capacity_reserved");
    assert.equal(reserved.headers.get("retry-after"), "1");
    // A tenant without pending work may take the reserve; then nobody can.
    assert.equal((await post(placed(otherAddress), "restart", { as: otherKey })).status, 202);
    const full = await post(placed(), "restart");
    assert.equal(full.status, 503);
    assert.equal(m.journal.totals().commands, 2);
  });

  it("a listed tenant may omit the key: keyed by its token (WARN + counter); an unlisted tenant gets 400", async () => {
    fake.script.set("restart", [
      { status: 202, body: { status: "restarting" } },
      { status: 202, body: { status: "restarting" } },
    ]);
    const uuid = placed(otherAddress);
    const r = await post(uuid, "restart", { key: null, as: otherKey });
    assert.deepEqual(r.body, { status: "restarting" });
    const metric = await registry.getSingleMetricAsString("fred_api_maintenance_legacy_key_total");
    assert.match(metric, /fred_api_maintenance_legacy_key_total 1/);
    const mine = placed();
    assert.equal((await post(mine, "restart", { key: null })).status, 400);
    const sent = JSON.parse(sentTo("restart")[0]!.body);
    assert.match(sent.maintenance_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4/);
  });
});

/**
 * What the reference v0.13's tenant tools send: no Idempotency-Key, a fresh token per
 * request, and for update `Content-Type: application/json` with `{"payload": base64}`.
 */
const v013 = (uuid: string, op: "restart" | "update") =>
  post(uuid, op, { key: null, ...(op === "update" ? { body: update(MANIFEST_2) } : {}) });

describe('restart/update from a v0.13 client under maintenance_legacy_idempotency_tenants: ["*"]', () => {
  before(() => {
    legacyTenants = () => ["*"];
  });
  after(() => {
    legacyTenants = () => [otherAddress];
  });

  it("every tenant is admitted on the legacy terms: 202, keyed by its token, WARN and counter", async () => {
    fake.script.set("restart", [{ status: 202, body: { status: "restarting" } }]);
    fake.script.set("update", [{ status: 202, body: { status: "updating" } }]);
    const restarted = placed();
    const r = await v013(restarted, "restart");
    assert.deepEqual({ status: r.status, body: r.body }, accepted("restart"));
    const updated = placed();
    const u = await v013(updated, "update");
    assert.deepEqual({ status: u.status, body: u.body }, accepted("update"));
    assert.deepEqual(
      m.journal.byMaintenanceId(updated, JSON.parse(sentTo("update")[0]!.body).maintenance_id)?.payload,
      MANIFEST_2,
    );
    const metric = await registry.getSingleMetricAsString("fred_api_maintenance_legacy_key_total");
    assert.match(metric, /fred_api_maintenance_legacy_key_total 2/);
    // Each keyless request is its own command: the next token is a new command (409 while
    // the first is pending), never the first one's answer.
    assert.equal((await v013(restarted, "restart")).status, 409);
    assert.equal(sentTo("restart").length, 1);
  });
});

describe("restart/update from a v0.13 client without the legacy list", () => {
  it("a tenant not listed gets 400 (Idempotency-Key required), nothing recorded or sent", async () => {
    const uuid = placed();
    for (const op of ["restart", "update"] as const) {
      const r = await v013(uuid, op);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.deepEqual(r.body, { error: "Idempotency-Key header is required", code: 400 });
    }
    assert.equal(m.journal.totals().commands, 0);
    assert.equal(fake.requests.length, 0);
  });
});
