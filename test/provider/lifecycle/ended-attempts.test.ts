import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ChainLease, LeaseStateName } from "../../../src/chain/port.ts";
import { buildCallbackUrl } from "../../../src/core/backend-contract/index.ts";
import { ManualClock, systemClock } from "../../../src/core/clock.ts";
import { newUuidV4 } from "../../../src/core/uuid.ts";
import { type BackendClient, createBackendClients } from "../../../src/provider/backend-client/index.ts";
import { type ProviderConfig, parseProviderConfig } from "../../../src/provider/config/index.ts";
import { Closer, SINGLE_CLOSE_TRY } from "../../../src/provider/lifecycle/closer.ts";
import { Lifecycle, type LifecycleDeps } from "../../../src/provider/lifecycle/index.ts";
import { Provisioner } from "../../../src/provider/lifecycle/provisioner.ts";
import { checkOverdueAttempts } from "../../../src/provider/lifecycle/timeouts.ts";
import { Reconciler } from "../../../src/provider/reconciler/index.ts";
import { PlacementStore } from "../../../src/provider/store/index.ts";
import { type MockProcess, spawnMock } from "../../backend/mock/process.ts";
import { pickFreePort, until } from "../../support/index.ts";
import { type FakeBackend, startFakeBackend } from "../backend-client/fake-backend.ts";
import { baseConfig, PROVIDER_UUID, yamlOf } from "../config/fixtures.ts";
import { lifecycleDeps, recordingChain } from "./deps.ts";

/**
 * Attempts whose lease ended on chain, against a real mock backend process: deprovision
 * accepted by the attempted backend retires the attempt (and the backend then refuses to
 * provision the lease again); a refusal, an unreachable backend or a fenced one keep it.
 * The reconciler's sweep and the timeout check hand such attempts to the Closer; ACTIVE and unknown
 * leases keep theirs. The chain is the only fake. The refusing backend is a scripted
 * HTTP server: a real backend never refuses a well-formed deprovision, but one that does
 * must not make us forget an attempt.
 */
const SECRET = "ended-attempts-secret-0123456789abcdef";
const REFUSER_SECRET = "ended-attempts-refuser-0123456789abcdef";
const SID = "8a3b4c5d-6e7f-4a81-9b2c-3d4e5f6a7b8c";
const SIDS = {
  down: "9b4c5d6e-7f8a-4b92-8c3d-4e5f6a7b8c9d",
  fenced: "ac5d6e7f-8a9b-4ca3-9d4e-5f6a7b8c9dae",
  refuser: "bd6e7f8a-9bac-4db4-8e5f-6a7b8c9daebf",
};
const SKU = "0190f3a2-7c1e-7000-8000-00000000000a";
/** The mock never finishes these provisions: they stay "provisioning" until closed. */
const HANGING = ["0190f3a2-7c1e-7000-8000-0000000000c1", "0190f3a2-7c1e-7000-8000-0000000000c2"] as const;
const dir = mkdtempSync(join(tmpdir(), "fred-ended-attempts-"));
const never = new AbortController().signal;

let mock: MockProcess;
let refuser: FakeBackend;
let config: ProviderConfig;
let clients: Map<string, BackendClient>;
let leaseSeq = 0;

/** A fresh chain-style lease UUID for each case. */
function leaseId(): string {
  return `0190f3a2-7c1e-7000-8000-${(0xd00 + ++leaseSeq).toString(16).padStart(12, "0")}`;
}

before(async () => {
  mock = await spawnMock({
    MOCK_BACKEND_ADDR: "127.0.0.1:0",
    MOCK_BACKEND_STORAGE_ID: SID,
    MOCK_BACKEND_CALLBACK_SECRET: SECRET,
    MOCK_BACKEND_NAME: "one",
    MOCK_BACKEND_HANG_LEASES: HANGING.join(","),
  });
  refuser = await startFakeBackend({ storageId: SIDS.refuser, secret: REFUSER_SECRET });
  const c = baseConfig();
  c.backends = [
    { name: "one", url: mock.ready.url, hmac_secret: SECRET, default: true },
    // Nothing listens there: every request fails in transport (an ambiguous outcome).
    { name: "down", url: `http://127.0.0.1:${await pickFreePort()}`, hmac_secret: `${SECRET}-down` },
    { name: "fenced", url: mock.ready.url, hmac_secret: `${SECRET}-fenced`, fenced: true },
    { name: "refuser", url: refuser.url, hmac_secret: REFUSER_SECRET },
  ];
  config = parseProviderConfig(yamlOf(c));
  const pins = new Map([["one", SID], ...Object.entries(SIDS)]);
  clients = await createBackendClients(config, pins, systemClock);
});

after(async () => {
  for (const c of clients?.values() ?? []) await c.close();
  await refuser?.close();
  await mock?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function lease(uuid: string, state: LeaseStateName): ChainLease {
  return {
    uuid,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    state,
    items: [{ skuUuid: SKU, quantity: 1n, serviceName: "", customDomain: "", lockedPrice: undefined }],
    metaHash: "",
  } as ChainLease;
}

function setup() {
  const clock = new ManualClock(Date.now());
  const store = PlacementStore.create(
    join(dir, `p-${newUuidV4()}.db`),
    PROVIDER_UUID,
    [
      { name: "one", storageId: SID, baseline: { provisions: 0, retentions: 0 } },
      ...Object.entries(SIDS).map(([name, storageId]) => ({
        name,
        storageId,
        baseline: { provisions: 0, retentions: 0 },
      })),
    ],
    clock.now(),
  );
  /** What the chain says about each lease; absent = "not found". */
  const onChain = new Map<string, ChainLease>();
  const chain = recordingChain([], {
    getLease: async (uuid: string) => onChain.get(uuid),
    // The listings the reconciler's sweep collects: every lease on chain in that state.
    leasesByProvider: async (_provider: string, state: LeaseStateName | undefined) =>
      [...onChain.values()].filter((l) => state === undefined || l.state === state),
  });
  const deps: LifecycleDeps = lifecycleDeps({ config, chain, store, clock, clients });
  const attempt = (leaseUuid: string, backend: string, state?: LeaseStateName) => {
    const operationId = newUuidV4();
    if (state !== undefined) onChain.set(leaseUuid, lease(leaseUuid, state));
    store.placements.recordAttempt({
      leaseUuid,
      backend,
      operationId,
      kind: "provision",
      createdAt: clock.now(),
    });
    return operationId;
  };
  return { deps, store, clock, attempt, closer: new Closer(deps, SINGLE_CLOSE_TRY) };
}

/** Sends `lease` to the mock under `operationId`, as providerd does. */
function provisionOnMock(leaseUuid: string, operationId: string) {
  return clients.get("one")!.provision({
    leaseUuid,
    tenant: "manifest1tenant",
    providerUuid: PROVIDER_UUID,
    items: [{ sku: SKU, quantity: 1 }],
    callbackUrl: buildCallbackUrl(config.callbackBase, "operation_id", operationId),
    lifecycleCallbackUrl: buildCallbackUrl(config.callbackBase, "lifecycle_id", operationId),
  });
}

async function statusOnMock(leaseUuid: string): Promise<string | undefined> {
  return (await clients.get("one")!.provisionsFor([leaseUuid]))[0]?.status;
}

async function untilGoneFromMock(leaseUuid: string): Promise<void> {
  await until(
    async () => (await statusOnMock(leaseUuid)) === undefined,
    `${leaseUuid} to leave the mock's list`,
    {
      timeoutMs: 20_000,
      intervalMs: 50,
    },
  );
}

/** The claim retiring rests on: after the deprovision, the backend refuses the lease. */
async function assertRefusedByMock(leaseUuid: string): Promise<void> {
  const again = await provisionOnMock(leaseUuid, newUuidV4());
  assert.equal(again.kind, "refused", `a new provision of ${leaseUuid} must be refused`);
  assert.equal(again.kind === "refused" ? again.status : 0, 409);
}

describe("closer: an accepted deprovision retires the attempt at that backend", () => {
  it("retires an attempt the backend never received; the backend then refuses the lease", async () => {
    const { store, attempt, closer } = setup();
    const l = leaseId();
    attempt(l, "one");
    const result = await closer.close(l, never);
    assert.deepEqual(result, { deprovisioned: ["one"], failed: [], unknown: false, retiredAttempt: "one" });
    assert.equal(store.placements.attemptFor(l), undefined);
    await assertRefusedByMock(l);
    store.close();
  });

  it("retires an attempt still provisioning there; its late redelivery starts nothing", async () => {
    const { store, attempt, closer } = setup();
    const l = HANGING[0];
    const op = attempt(l, "one");
    assert.equal((await provisionOnMock(l, op)).kind, "accepted");
    assert.equal(await statusOnMock(l), "provisioning");
    const result = await closer.close(l, never);
    assert.equal(result.retiredAttempt, "one");
    assert.equal(store.placements.attemptFor(l), undefined);
    await untilGoneFromMock(l);
    // The same request arriving late is refused like any other for a closed lease (409):
    // nothing comes back to life.
    const late = await provisionOnMock(l, op);
    assert.equal(late.kind, "refused");
    assert.equal(late.kind === "refused" ? late.status : 0, 409);
    assert.equal(await statusOnMock(l), undefined);
    await assertRefusedByMock(l);
    store.close();
  });

  it("keeps the attempt when its backend refuses, cannot be reached, or is fenced", async () => {
    const { store, attempt, closer } = setup();
    refuser.script.set("deprovision", [{ status: 409, body: { error: "busy" } }]);
    const cases = { refuser: leaseId(), down: leaseId(), fenced: leaseId() };
    const ops = Object.fromEntries(
      Object.entries(cases).map(([backend, l]) => [backend, attempt(l, backend)]),
    );
    const before = refuser.requests.length;
    const results = Object.fromEntries(
      await Promise.all(
        Object.entries(cases).map(async ([backend, l]) => [backend, await closer.close(l, never)] as const),
      ),
    );
    for (const [backend, l] of Object.entries(cases)) {
      assert.deepEqual(results[backend], {
        deprovisioned: [],
        failed: [backend],
        unknown: false,
        retiredAttempt: undefined,
      });
      assert.equal(store.placements.attemptFor(l)?.operationId, ops[backend], `${backend}: attempt kept`);
    }
    assert.equal(refuser.requests.length, before + 1, "the refusing backend was asked once");
    store.close();
  });

  it("an accepted deprovision elsewhere does not retire an attempt at another backend", async () => {
    const { store, attempt, closer } = setup();
    const l = leaseId();
    const op = attempt(l, "down");
    // The owner's report and the attempt disagree: a conflict naming both backends.
    store.placements.applyPositiveInventory("one", [l], Date.now());
    const result = await closer.close(l, never);
    assert.deepEqual(result.deprovisioned, ["one"]);
    assert.deepEqual(result.failed, ["down"]);
    assert.equal(result.retiredAttempt, undefined);
    assert.equal(store.placements.attemptFor(l)?.operationId, op);
    store.close();
  });
});

describe("redelivery of an attempt whose lease is no longer PENDING", () => {
  it("a reconciler sweep deprovisions and retires attempts of ended leases; ACTIVE and unknown leases keep theirs", async () => {
    const { deps, store, attempt } = setup();
    const lifecycle = new Lifecycle(deps);
    const closed = leaseId();
    const rejected = HANGING[1];
    const active = leaseId();
    const unknown = leaseId();
    const pending = leaseId();
    attempt(closed, "one", "LEASE_STATE_CLOSED");
    const rejectedOp = attempt(rejected, "one", "LEASE_STATE_REJECTED");
    const activeOp = attempt(active, "one", "LEASE_STATE_ACTIVE");
    const unknownOp = attempt(unknown, "one");
    const pendingOp = attempt(pending, "one", "LEASE_STATE_PENDING");
    // The rejected lease's provision reached the backend and is still running there.
    assert.equal((await provisionOnMock(rejected, rejectedOp)).kind, "accepted");

    const reconciler = new Reconciler({
      ...deps,
      lifecycle,
      feedLive: async () => {},
      clock: deps.clock,
      logger: deps.logger,
    });
    await reconciler.sweep(never);
    await deps.queue.idle();

    assert.equal(store.placements.attemptFor(closed), undefined, "CLOSED: retired");
    assert.equal(store.placements.attemptFor(rejected), undefined, "REJECTED while provisioning: retired");
    await assertRefusedByMock(closed);
    await untilGoneFromMock(rejected);
    assert.equal(store.placements.attemptFor(active)?.operationId, activeOp, "ACTIVE: kept");
    assert.equal(store.placements.attemptFor(unknown)?.operationId, unknownOp, "not found: kept");
    assert.equal(await statusOnMock(active), undefined, "ACTIVE: nothing sent");
    assert.equal(await statusOnMock(unknown), undefined, "not found: nothing sent");
    // Control: a PENDING lease's attempt is redelivered as before.
    assert.equal(store.placements.attemptFor(pending)?.operationId, pendingOp);
    assert.notEqual(await statusOnMock(pending), undefined, "PENDING: redelivered");
    store.close();
  });

  it("redeliver names the ended lease and sends nothing", async () => {
    const { deps, store, attempt } = setup();
    const provisioner = new Provisioner(deps);
    const steps: Record<string, string> = {};
    for (const state of [
      "LEASE_STATE_CLOSED",
      "LEASE_STATE_REJECTED",
      "LEASE_STATE_EXPIRED",
      "LEASE_STATE_ACTIVE",
    ] as const) {
      const l = leaseId();
      attempt(l, "one", state);
      steps[state] = await provisioner.redeliver(store.placements.attemptFor(l)!, never);
      assert.equal(await statusOnMock(l), undefined, `${state}: nothing provisioned`);
      assert.notEqual(
        store.placements.attemptFor(l),
        undefined,
        `${state}: redeliver itself removes nothing`,
      );
    }
    const missing = leaseId();
    attempt(missing, "one");
    steps.missing = await provisioner.redeliver(store.placements.attemptFor(missing)!, never);
    assert.deepEqual(steps, {
      LEASE_STATE_CLOSED: "lease-ended",
      LEASE_STATE_REJECTED: "lease-ended",
      LEASE_STATE_EXPIRED: "lease-ended",
      LEASE_STATE_ACTIVE: "not-pending",
      missing: "not-pending",
    });
    store.close();
  });

  it("the callback-timeout check retires an overdue attempt of an EXPIRED lease", async () => {
    const { deps, store, clock, attempt } = setup();
    const expired = leaseId();
    const active = leaseId();
    attempt(expired, "one", "LEASE_STATE_EXPIRED");
    const activeOp = attempt(active, "one", "LEASE_STATE_ACTIVE");
    clock.advance(config.provisionCallbackTimeoutMs);
    const verdicts = await checkOverdueAttempts(deps, new Provisioner(deps), never);
    assert.deepEqual(Object.fromEntries(verdicts), { [expired]: "lease-ended", [active]: "redelivered" });
    assert.equal(store.placements.attemptFor(expired), undefined);
    await assertRefusedByMock(expired);
    assert.equal(store.placements.attemptFor(active)?.operationId, activeOp);
    store.close();
  });
});

describe("lease-ending chain events", () => {
  it("lease_closed, lease_expired, lease_auto_closed and lease_cancelled each deprovision and retire; another provider's event does nothing", {
    timeout: 60_000,
  }, async () => {
    const { deps, store, attempt } = setup();
    const lifecycle = new Lifecycle(deps);
    const kinds = ["lease_closed", "lease_expired", "lease_auto_closed", "lease_cancelled"] as const;
    const leases = kinds.map(() => leaseId());
    const foreign = leaseId();
    for (const l of [...leases, foreign]) {
      const op = attempt(l, "one", "LEASE_STATE_CLOSED");
      assert.equal((await provisionOnMock(l, op)).kind, "accepted");
    }
    const event = (kind: (typeof kinds)[number], leaseUuid: string, providerUuid = PROVIDER_UUID) => ({
      kind,
      leaseUuid,
      providerUuid,
      tenant: "manifest1tenant",
      height: 7,
      txHash: undefined,
      reason: undefined,
    });
    kinds.forEach((kind, i) => {
      lifecycle.onEvent(event(kind, leases[i]!));
    });
    lifecycle.onEvent(event("lease_closed", foreign, "0190f3a2-7c1e-7000-8000-0000000000ff"));
    // The lifecycle says when its lease work is done: no polling.
    await lifecycle.idle();
    for (const l of leases) assert.equal(store.placements.attemptFor(l), undefined, `${l}: attempt retired`);
    for (const l of leases) await untilGoneFromMock(l);
    assert.notEqual(
      store.placements.attemptFor(foreign),
      undefined,
      "another provider's event changes nothing",
    );
    assert.notEqual(await statusOnMock(foreign), undefined);
    await lifecycle.stop(1_000);
    store.close();
  });
});

describe("a close its backend does not confirm", () => {
  it("is tried again from the close-retry queue, before any sweep, until the backend accepts", {
    timeout: 60_000,
  }, async () => {
    const { deps, store, attempt, clock } = setup();
    const lifecycle = new Lifecycle(deps);
    const l = leaseId();
    attempt(l, "refuser", "LEASE_STATE_CLOSED");
    // The event path's five tries, then the queue's first retry, are refused; the next is accepted.
    refuser.script.set(
      "deprovision",
      Array.from({ length: 6 }, () => ({ status: 409, body: { error: "busy" } })),
    );
    const asked = () =>
      refuser.requests.filter((r) => r.url.includes("/deprovision?") && r.body.includes(l)).length;
    lifecycle.onEvent({
      kind: "lease_closed",
      leaseUuid: l,
      providerUuid: PROVIDER_UUID,
      tenant: "manifest1tenant",
      height: 7,
      txHash: undefined,
      reason: undefined,
    });
    // Every wait is on the manual clock: move it a second per poll until the close is confirmed.
    let queued = false;
    let keptWhileQueued = false;
    await until(
      () => {
        if (lifecycle.closeRetriesPending === 1 && !queued) {
          queued = true;
          keptWhileQueued = store.placements.attemptFor(l) !== undefined;
        }
        clock.advance(1_000);
        return store.placements.attemptFor(l) === undefined;
      },
      "retried from the queue until accepted, then retired",
      { context: () => `asked ${asked()}, queued ${lifecycle.closeRetriesPending}` },
    );
    assert.ok(queued, "the unconfirmed close went to the retry queue");
    assert.ok(keptWhileQueued, "not confirmed: the attempt was kept meanwhile");
    assert.equal(asked(), 7, "five tries, a refused retry, an accepted retry");
    assert.equal(lifecycle.closeRetriesPending, 0, "forgotten once confirmed");
    await lifecycle.stop(1_000);
    store.close();
  });
});
