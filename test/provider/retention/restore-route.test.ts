import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { AckBatcher } from "../../../src/chain/tx/ack-batcher.ts";
import { ManualClock } from "../../../src/core/clock.ts";
import { type BackendClient, createBackendClients } from "../../../src/provider/backend-client/index.ts";
import { parseProviderConfig } from "../../../src/provider/config/index.ts";
import type { LifecycleDeps } from "../../../src/provider/lifecycle/index.ts";
import { Provisioner } from "../../../src/provider/lifecycle/provisioner.ts";
import { Restorer } from "../../../src/provider/retention/index.ts";
import { RecordingChain } from "../../chain/recording-chain.ts";
import { Harness } from "../api/harness.ts";
import { type FakeBackend, startFakeBackend } from "../backend-client/fake-backend.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps } from "../lifecycle/deps.ts";

/**
 * `POST /v1/leases/{uuid}/restore` over real HTTP, with a real placement store, the
 * restore application and a real backend client talking to a small contract-speaking
 * HTTP backend (scripted answers); only the chain is in memory. Each case checks the
 * answer (status, reason) and what it left in the store: a refusal before admission
 * writes nothing, a definite backend refusal hands the source back, an ambiguous answer
 * keeps the target's attempt and the source's claim.
 */
const SID = "5c0e2f1a-3b4d-4e6f-8a9b-0c1d2e3f4a5b";
const SECRET = "restore-route-secret-0123456789abcdef";
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";
const SOURCE_OP = "3f2c1b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";

let fake: FakeBackend;
let clients: Map<string, BackendClient>;
let h: Harness;
let chain: RecordingChain;
let deps: LifecycleDeps;
let source: string;
let target: string;

before(async () => {
  fake = await startFakeBackend({ storageId: SID, secret: SECRET });
  const c = baseConfig();
  c.backends = [{ name: "one", url: fake.url, hmac_secret: SECRET, default: true }];
  c.billing_only_skus = ["0190f3a2-7c1e-7000-8000-00000000b111"];
  const config = parseProviderConfig(yamlOf(c));
  clients = await createBackendClients(config, new Map([["one", SID]]), new ManualClock(Date.now()));
});

after(async () => {
  for (const c of clients.values()) await c.close();
  await fake.close();
});

beforeEach(async () => {
  await h?.close();
  fake.script.clear();
  fake.requests.length = 0;
  chain = new RecordingChain();
  h = new Harness();
  const config = parseProviderConfig(
    yamlOf({
      ...baseConfig(),
      billing_only_skus: ["0190f3a2-7c1e-7000-8000-00000000b111"],
      backends: [{ name: "one", url: fake.url, hmac_secret: SECRET, default: true }],
    }),
  );
  // The harness opens the store in start(): its rooms are filled in once it has.
  deps = lifecycleDeps({
    config,
    chain,
    store: { placements: undefined, fleet: undefined } as never,
    clock: h.clock,
    clients,
  });
  await h.start({ chain, clients, config, restorer: new Restorer(deps) });
  deps.store = h.store;
  deps.fleet = h.fleet;
  const items = [
    { skuUuid: SKU, quantity: 1n, serviceName: "app", customDomain: "", lockedPrice: undefined },
  ];
  source = chain.addLease(PROVIDER_UUID, { tenant: h.tenant, state: "LEASE_STATE_CLOSED", items }).uuid;
  target = chain.addLease(PROVIDER_UUID, { tenant: h.tenant, items, metaHash: "ab".repeat(32) }).uuid;
  // The source ran on "one" and its data was retained on close.
  h.store.recordAttempt({
    leaseUuid: source,
    backend: "one",
    operationId: SOURCE_OP,
    kind: "provision",
    createdAt: 0,
  });
  h.store.settleOperation(source, SOURCE_OP, "success", 1);
  assert.ok(h.store.retained.mark(source, "one", SID, 2));
});

after(async () => {
  await h?.close();
});

async function restore(
  into: string,
  body: unknown = { from_lease_uuid: source },
  key = h.key,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h.url}/v1/leases/${into}/restore`, {
    method: "POST",
    headers: { authorization: `Bearer ${h.token(into, key)}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

const restores = () => fake.requests.filter((r) => r.url.includes("/restore"));
const untouched = () => {
  assert.equal(h.store.attemptFor(target), undefined, "no attempt for the target");
  assert.equal(h.store.retained.get(source)?.restoreTarget, undefined, "the source is not claimed");
};

describe("POST restore: accepted", () => {
  it("admits durably, sends the contract body on the source's backend, answers 202", async () => {
    fake.script.set("restore", [{ status: 202, body: { status: "restoring" } }]);
    const r = await restore(target);
    assert.deepEqual(r, { status: 202, body: { status: "provisioning" } });
    const attempt = h.store.attemptFor(target);
    assert.equal(attempt?.kind, "restore");
    assert.equal(attempt?.backend, "one");
    assert.equal(h.store.retained.get(source)?.restoreTarget, target);
    const [sent] = restores();
    assert.ok(sent?.signatureValid);
    const body = JSON.parse(sent.body) as Record<string, unknown>;
    assert.equal(body.lease_uuid, target);
    assert.equal(body.from_lease_uuid, source);
    assert.equal(body.tenant, h.tenant);
    assert.deepEqual(body.items, [{ sku: SKU, quantity: 1, service_name: "app" }]);
    assert.ok(String(body.callback_url).endsWith(`operation_id=${attempt?.operationId}`));
    assert.ok(String(body.lifecycle_callback_url).endsWith(`lifecycle_id=${attempt?.operationId}`));
    // The same source again, into another fresh lease: the source is taken.
    const other = chain.addLease(PROVIDER_UUID, {
      tenant: h.tenant,
      items: chain.leases.get(target)?.items ?? [],
    });
    const again = await restore(other.uuid);
    assert.equal(again.status, 409);
    assert.equal(again.body.reason, "source_busy");
    // And the same target again: it has an unresolved attempt.
    const third = chain.addLease(PROVIDER_UUID, { tenant: h.tenant, state: "LEASE_STATE_EXPIRED" });
    h.store.recordAttempt({
      leaseUuid: third.uuid,
      backend: "one",
      operationId: SOURCE_OP,
      kind: "provision",
      createdAt: 0,
    });
    h.store.settleOperation(third.uuid, SOURCE_OP, "success", 1);
    h.store.retained.mark(third.uuid, "one", SID, 2);
    const busy = await restore(target, { from_lease_uuid: third.uuid });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.reason, "target_busy");
  });
});

describe("POST restore: the backend's refusals", () => {
  const cases: [string, { status: number; body?: object | string }, number, string | undefined, string?][] = [
    [
      "a demote that does not fit is relayed as 422",
      {
        status: 422,
        body: {
          error: "retained data exceeds the requested smaller tier (900 MB > 512 MB)",
          code: "demote_exceeds_tier",
        },
      },
      422,
      undefined,
      "retained data exceeds the requested smaller tier (900 MB > 512 MB)",
    ],
    [
      "a bare 422 (no retained data) is a 404",
      { status: 422, body: { error: "no retained data" } },
      404,
      undefined,
    ],
    [
      "an items mismatch (400) is relayed as 400",
      { status: 400, body: { error: "items do not match" } },
      400,
      undefined,
      "items do not match",
    ],
    ["a state conflict (409) is a 409", { status: 409, body: { error: "invalid state" } }, 409, undefined],
    [
      "no capacity is a 503",
      { status: 503, body: { error: "full", code: "insufficient_resources" } },
      503,
      undefined,
    ],
  ];
  for (const [name, answer, status, reason, message] of cases) {
    it(`${name}; the source gets its data back`, async () => {
      fake.script.set("restore", [answer]);
      const r = await restore(target);
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(r.body.code, status);
      assert.equal(r.body.reason, reason);
      if (message !== undefined) assert.equal(r.body.error, message);
      untouched();
      assert.equal(h.store.retained.get(source)?.owner, "one", "still retained");
    });
  }

  for (const [name, answer, status] of [
    ["a generic 5xx is ambiguous (500)", { status: 500, body: { error: "boom" } }, 500],
    [
      "a coded already_provisioned is ambiguous (500)",
      { status: 409, body: { error: "x", code: "already_provisioned" } },
      500,
    ],
    ["an off-contract error body is 502", { status: 400, body: "<html>no</html>" }, 502],
  ] as const) {
    it(`${name}; the attempt and the source's claim are kept`, async () => {
      fake.script.set("restore", [answer]);
      const r = await restore(target);
      assert.equal(r.status, status);
      assert.ok(!String(r.body.error).includes("boom"), "backend text is not relayed");
      assert.equal(h.store.attemptFor(target)?.kind, "restore");
      assert.equal(h.store.retained.get(source)?.restoreTarget, target);
    });
  }
});

describe("redelivery of an admitted restore (reconciler, callback timeout)", () => {
  it("resends the same restore (same operation id, same source), never a provision", async () => {
    fake.script.set("restore", [
      { status: 500, body: { error: "boom" } },
      { status: 202, body: { status: "restoring" } },
    ]);
    assert.equal((await restore(target)).status, 500);
    const attempt = h.store.attemptFor(target);
    assert.ok(attempt !== undefined);
    const step = await new Provisioner(deps).redeliver(attempt, AbortSignal.timeout(10_000));
    assert.equal(step, "sent");
    const [first, second] = restores();
    assert.equal(second?.body, first?.body, "byte-identical request");
    assert.equal(fake.requests.filter((r) => r.url.includes("/provision")).length, 0);
  });

  it("a refused redelivery clears the attempt and hands the source back, without rejecting the target", async () => {
    fake.script.set("restore", [
      { status: 500, body: { error: "boom" } },
      { status: 422, body: { error: "gone" } },
    ]);
    await restore(target);
    const attempt = h.store.attemptFor(target);
    assert.ok(attempt !== undefined);
    assert.equal(await new Provisioner(deps).redeliver(attempt, AbortSignal.timeout(10_000)), "refused");
    untouched();
    assert.deepEqual(chain.sent, []);
  });
});

describe("POST restore: refusals before the backend is asked (nothing is written)", () => {
  it("bad input: path, body, equal leases, billing-only target", async () => {
    const bad = async (into: string, body: unknown, reason?: string, error?: string) => {
      const r = await restore(into, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.reason, reason);
      if (error !== undefined) assert.equal(r.body.error, error, JSON.stringify(body));
    };
    const res = await fetch(`${h.url}/v1/leases/not-a-uuid/restore`, { method: "POST" });
    assert.equal(res.status, 400);
    // The reference's texts for the reference's conditions.
    await bad(target, {}, undefined, "from_lease_uuid is required");
    await bad(target, { from_lease_uuid: "" }, undefined, "from_lease_uuid is required");
    await bad(target, { from_lease_uuid: "nope" }, undefined, "from_lease_uuid is not a valid UUID");
    await bad(
      target,
      { from_lease_uuid: source.toUpperCase() },
      undefined,
      "from_lease_uuid is not a valid UUID",
    );
    await bad(target, { from_lease_uuid: 7 }, undefined, "invalid request body");
    await bad(target, [], undefined, "invalid request body");
    await bad(target, "{not json", undefined, "invalid request body");
    await bad(target, { from_lease_uuid: target });
    const billing = chain.addLease(PROVIDER_UUID, {
      tenant: h.tenant,
      state: "LEASE_STATE_ACTIVE",
      items: [
        {
          skuUuid: "0190f3a2-7c1e-7000-8000-00000000b111",
          quantity: 1n,
          serviceName: "",
          customDomain: "",
          lockedPrice: undefined,
        },
      ],
    });
    await bad(billing.uuid, { from_lease_uuid: source }, "billing_only");
    untouched();
    assert.equal(restores().length, 0);
  });

  it("401 without a valid token; 403 for another tenant's target; 404 for an unknown target", async () => {
    const res = await fetch(`${h.url}/v1/leases/${target}/restore`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ from_lease_uuid: source }),
    });
    assert.equal(res.status, 401);
    const foreign = chain.addLease(PROVIDER_UUID, { tenant: "manifest1someoneelse" });
    assert.equal((await restore(foreign.uuid)).status, 403);
    assert.equal((await restore("0190f3a2-7c1e-7000-8000-00000000cafe")).status, 404);
    untouched();
  });

  it("another tenant's source answers 404, exactly like a source that does not exist", async () => {
    const theirs = chain.addLease(PROVIDER_UUID, {
      tenant: "manifest1someoneelse",
      state: "LEASE_STATE_CLOSED",
    });
    h.store.recordAttempt({
      leaseUuid: theirs.uuid,
      backend: "one",
      operationId: SOURCE_OP,
      kind: "provision",
      createdAt: 0,
    });
    h.store.settleOperation(theirs.uuid, SOURCE_OP, "success", 1);
    h.store.retained.mark(theirs.uuid, "one", SID, 2);
    const cross = await restore(target, { from_lease_uuid: theirs.uuid });
    const absent = await restore(target, { from_lease_uuid: "0190f3a2-7c1e-7000-8000-00000000dead" });
    assert.equal(cross.status, 404);
    assert.deepEqual(cross.body, absent.body, "no existence leak");
    assert.equal(h.store.retained.get(theirs.uuid)?.restoreTarget, undefined);
    untouched();
  });

  it("a source that is not ended, or not retained answers 404", async () => {
    const lease = chain.leases.get(source)!;
    for (const state of ["LEASE_STATE_ACTIVE", "LEASE_STATE_PENDING"] as const) {
      chain.leases.set(source, { ...lease, state });
      assert.equal((await restore(target)).status, 404, state);
    }
    chain.leases.set(source, { ...lease, state: "LEASE_STATE_EXPIRED" });
    h.store.retirePlacement(source, "one");
    assert.equal((await restore(target)).status, 404, "no placement record");
    untouched();
    assert.equal(restores().length, 0);
  });

  it("a REJECTED source whose data its owner retains is restorable (cancelled after a restore committed into it)", async () => {
    chain.leases.set(source, { ...chain.leases.get(source)!, state: "LEASE_STATE_REJECTED" });
    fake.script.set("restore", [{ status: 202, body: { status: "restoring" } }]);
    const r = await restore(target);
    assert.deepEqual(r, { status: 202, body: { status: "provisioning" } });
    assert.equal(h.store.retained.get(source)?.restoreTarget, target);
    assert.equal(restores().length, 1);
  });

  it("a target whose rejection is decided but not on chain yet answers 409 target_busy", async () => {
    // The refused empty provision of a lease without meta_hash: the chain still reads PENDING.
    let land = () => {};
    const landed = new Promise<void>((resolve) => {
      land = resolve;
    });
    const held = {
      acknowledge: (uuids: readonly string[]) => chain.acknowledge(uuids),
      reject: async (uuids: readonly string[], reason: string) => {
        await landed;
        return chain.reject(uuids, reason);
      },
    };
    const real = deps.acks;
    deps.acks = new AckBatcher({ chain: held, clock: h.clock, maxBatch: 1 });
    deps.acks.reject(target, "InvalidManifest");
    try {
      const r = await restore(target);
      assert.equal(r.status, 409);
      assert.equal(r.body.reason, "target_busy");
      untouched();
      assert.equal(restores().length, 0);
    } finally {
      land();
      await deps.acks.close();
      deps.acks = real;
    }
    assert.equal(await chain.getLease(target).then((l) => l?.state), "LEASE_STATE_REJECTED");
  });

  it("a source whose backend was retired as lost answers 410 backend_storage_lost (another tenant's: 404)", async () => {
    h.fleet.markLost("one", 3);
    const r = await restore(target);
    assert.equal(r.status, 410, JSON.stringify(r.body));
    assert.equal(r.body.reason, "backend_storage_lost");
    untouched();
    const lease = chain.leases.get(source)!;
    chain.leases.set(source, { ...lease, tenant: "manifest1someoneelse" });
    const cross = await restore(target);
    assert.equal(cross.status, 404, "existence is not leaked");
    chain.leases.set(source, { ...lease, state: "LEASE_STATE_ACTIVE" });
    assert.equal((await restore(target)).status, 404, "a source that has not ended");
    untouched();
    assert.equal(restores().length, 0, "the lost backend is never asked");
  });

  it("a target that is not PENDING answers 409 target_not_pending", async () => {
    chain.leases.set(target, { ...chain.leases.get(target)!, state: "LEASE_STATE_ACTIVE" });
    const r = await restore(target);
    assert.equal(r.status, 409);
    assert.equal(r.body.reason, "target_not_pending");
    untouched();
  });

  it("lifecycle work on either lease answers 409 source_busy / target_busy", async () => {
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const work = deps.queue.run(source, () => held);
    const s = await restore(target);
    assert.equal(s.body.reason, "source_busy");
    release();
    await work;
    let release2 = () => {};
    const held2 = new Promise<void>((r) => {
      release2 = r;
    });
    const work2 = deps.queue.run(target, () => held2);
    const t = await restore(target);
    assert.equal(t.body.reason, "target_busy");
    release2();
    await work2;
    untouched();
  });

  it("a conflicted source placement, or one naming a backend we cannot ask, is 503", async () => {
    h.store.quarantine(source, ["one", "two"], 3);
    const r = await restore(target);
    assert.equal(r.status, 503);
    untouched();
  });
});
