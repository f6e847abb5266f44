import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Action,
  type CleanupSkip,
  type CustomDomain,
  type ProvisionObservation,
  plan,
  REREAD_GATE,
  ROWS,
  type Row,
  rereadPermitsDestruction,
} from "../../../src/core/reconcile/index.ts";
import {
  attemptAt,
  BILLING_SKU,
  chainLease,
  confirmed,
  GRACE_MS,
  lease,
  NOW,
  op,
  quarantined,
  type Situation,
  situation,
} from "./fixtures.ts";

/**
 * The State Matrix, row by row. Every case names the seed's row (ROWS) that must decide it;
 * the coverage test below fails when a row has no case. `actions` lists everything the plan
 * does for the case's lease, in order.
 */
interface Case {
  row: Row;
  name: string;
  s: Situation;
  actions: Action[];
  skips?: CleanupSkip[];
}

const L = lease(1);
const P = (opts: Parameters<typeof chainLease>[2] = {}) => [chainLease(L, "PENDING", opts)];
const A = (opts: Parameters<typeof chainLease>[2] = {}) => [chainLease(L, "ACTIVE", opts)];
const onA = { placements: { [L]: confirmed("a") } };
/** A confirmed record on "a" without a lifecycle id. */
const unbound = { kind: "confirmed", owner: "a", updatedAt: NOW - 2 * GRACE_MS, noLifecycle: true } as const;
const aReports = (status: string | ProvisionObservation) => ({
  a: { provisions: { [L]: status } },
  b: {},
});
const domain = (backend = "a"): Action => ({ kind: "reconcile_custom_domain", lease: L, backend });
const orphan = (backend: string, retireAttempt = false): Action => ({
  kind: "orphan_deprovision_candidate",
  gate: REREAD_GATE,
  lease: L,
  backend,
  retireAttempt,
});

const CASES: Case[] = [
  // PENDING rows.
  {
    row: "pendingAwaitPayload",
    name: "recordless, hashed, nothing uploaded",
    s: { chain: P({ hash: true }) },
    actions: [],
  },
  {
    row: "pendingAwaitPayload",
    name: "owner known, hashed, nothing uploaded",
    s: { chain: P({ hash: true }), ...onA },
    actions: [],
  },
  {
    row: "pendingProvisionStored",
    name: "recordless: any backend that answered",
    s: { chain: P({ hash: true }), payloads: [L] },
    actions: [{ kind: "provision", lease: L, target: { scope: ["a", "b"] }, payload: "stored" }],
  },
  {
    row: "pendingProvisionStored",
    name: "confirmed owner that lost it: the owner only",
    s: { chain: P({ hash: true }), payloads: [L], ...onA },
    actions: [{ kind: "provision", lease: L, target: { backend: "a" }, payload: "stored" }],
  },
  {
    row: "pendingProvision",
    name: "recordless, no hash",
    s: { chain: P() },
    actions: [{ kind: "provision", lease: L, target: { scope: ["a", "b"] }, payload: "none" }],
  },
  {
    row: "pendingProvision",
    name: "recordless on a degraded sweep: only backends that answered",
    s: { chain: P(), backends: { a: {}, b: { silent: "unreachable" } } },
    actions: [{ kind: "provision", lease: L, target: { scope: ["a"] }, payload: "none" }],
  },
  {
    row: "pendingReady",
    name: "confirmed owner reports ready",
    s: { chain: P(), ...onA, backends: aReports("ready") },
    actions: [{ kind: "acknowledge", lease: L }],
  },
  {
    row: "pendingReady",
    name: "the attempted backend reports ready: confirm, then acknowledge",
    s: { chain: P(), attempts: { [L]: attemptAt("a") }, backends: aReports("ready") },
    actions: [
      { kind: "confirm_attempt", lease: L, backend: "a", operationId: op(1) },
      { kind: "acknowledge", lease: L },
    ],
  },
  {
    row: "pendingInFlight",
    name: "provisioning",
    s: { chain: P(), ...onA, backends: aReports("provisioning") },
    actions: [],
  },
  {
    row: "pendingInFlight",
    name: "an attempt still provisioning is left to its callback",
    s: { chain: P(), attempts: { [L]: attemptAt("a") }, backends: aReports("provisioning") },
    actions: [],
  },
  {
    row: "pendingInFlight",
    name: "a status the matrix does not name",
    s: { chain: P(), ...onA, backends: aReports("deprovisioning") },
    actions: [],
  },
  {
    row: "pendingFailed",
    name: "reject with the sweep's reason",
    s: { chain: P(), ...onA, backends: aReports("failed") },
    actions: [{ kind: "reject", lease: L, reason: "provisioning failed" }],
  },
  // ACTIVE rows.
  {
    row: "activeProvisioning",
    name: "in-flight re-provision",
    s: { chain: A(), ...onA, backends: aReports("provisioning") },
    actions: [domain()],
  },
  {
    row: "activeReady",
    name: "healthy",
    s: { chain: A(), ...onA, backends: aReports("ready") },
    actions: [domain()],
  },
  {
    row: "activeReady",
    name: "healthy on a record without a lifecycle id: the owner's record gives it back",
    s: {
      chain: A(),
      placements: { [L]: unbound },
      backends: aReports({ status: "ready", customDomains: [] }),
    },
    actions: [{ kind: "restore_lifecycle", lease: L, backend: "a" }],
  },
  {
    row: "activeRestarting",
    name: "restarting on a record without a lifecycle id: nothing restored while it moves",
    s: {
      chain: A(),
      placements: { [L]: unbound },
      backends: aReports({ status: "restarting", customDomains: [] }),
    },
    actions: [],
  },
  {
    row: "pendingReady",
    name: "PENDING on a record without a lifecycle id: acknowledged, nothing restored",
    s: {
      chain: P(),
      placements: { [L]: unbound },
      backends: aReports("ready"),
    },
    actions: [{ kind: "acknowledge", lease: L }],
  },
  {
    row: "activeRestarting",
    name: "in-flight restart",
    s: { chain: A(), ...onA, backends: aReports("restarting") },
    actions: [domain()],
  },
  {
    row: "activeUpdating",
    name: "in-flight update",
    s: { chain: A(), ...onA, backends: aReports("updating") },
    actions: [domain()],
  },
  {
    row: "activeFailed",
    name: "re-provision on the owner with the stored payload",
    s: { chain: A({ hash: true }), ...onA, payloads: [L], backends: aReports("failed") },
    actions: [{ kind: "reprovision", lease: L, backend: "a", payload: "stored" }],
  },
  {
    row: "activeFailed",
    name: "budget not exhausted: re-provision, payload rebuilt from the latest release",
    s: {
      chain: A({ hash: true }),
      ...onA,
      backends: aReports({ status: "failed", terminalBudget: "retry" }),
    },
    actions: [{ kind: "reprovision", lease: L, backend: "a", payload: "latest_release" }],
  },
  {
    row: "activeFailed",
    name: "budget exhausted: close on chain",
    s: { chain: A(), ...onA, backends: aReports({ status: "failed", terminalBudget: "exhausted" }) },
    actions: [{ kind: "close", lease: L, reason: "workload failed repeatedly" }],
  },
  {
    row: "activeMissing",
    name: "owner lost it: provision there, payload from its latest release",
    s: { chain: A({ hash: true }), ...onA },
    actions: [{ kind: "provision", lease: L, target: { backend: "a" }, payload: "latest_release" }],
  },
  {
    row: "activeMissing",
    name: "owner lost it, payload stored",
    s: { chain: A({ hash: true }), ...onA, payloads: [L] },
    actions: [{ kind: "provision", lease: L, target: { backend: "a" }, payload: "stored" }],
  },
  {
    row: "activeMissing",
    name: "recordless on a complete view (lease_created was missed)",
    s: { chain: A() },
    actions: [{ kind: "provision", lease: L, target: { scope: ["a", "b"] }, payload: "none" }],
  },
  // Ended and unknown chain states.
  {
    row: "terminalOrphan",
    name: "listed CLOSED, still running: candidate pending the re-read",
    s: { chain: [chainLease(L, "CLOSED")], backends: { a: {}, b: { provisions: { [L]: "ready" } } } },
    actions: [orphan("b")],
  },
  {
    row: "absentOrphan",
    name: "absent from the sweep, reported by its owner",
    s: { ...onA, backends: aReports("ready") },
    actions: [orphan("a")],
    skips: [{ pass: "placement", lease: L, reason: "on_backend" }],
  },
  {
    row: "absentOrphan",
    name: "an unresolved attempt of an absent lease: deprovision there, retire the attempt",
    s: { attempts: { [L]: attemptAt("b") } },
    actions: [orphan("b", true)],
  },
  {
    row: "unknownState",
    name: "UNSPECIFIED: nothing, not even cleanup",
    s: { chain: [chainLease(L, "UNSPECIFIED")], ...onA, payloads: [L], backends: aReports("failed") },
    actions: [],
    skips: [
      { pass: "orphan", lease: L, reason: "unknown_chain_state" },
      { pass: "payload", lease: L, reason: "unknown_chain_state" },
      { pass: "placement", lease: L, reason: "unknown_chain_state" },
    ],
  },
  {
    row: "unknownState",
    name: "a future enum value, listed beside PENDING: the doubt wins",
    s: { chain: [chainLease(L, "PENDING"), chainLease(L, "9")], backends: aReports("ready"), ...onA },
    actions: [],
    skips: [
      { pass: "orphan", lease: L, reason: "unknown_chain_state" },
      { pass: "placement", lease: L, reason: "unknown_chain_state" },
    ],
  },
  // Placement-safety rows.
  {
    row: "retiredLost",
    name: "PENDING on a retired backend: reject, needs no backend",
    s: {
      chain: P(),
      placements: { [L]: confirmed("old") },
      retired: ["old"],
      backends: { a: { silent: "unreachable" } },
    },
    actions: [{ kind: "reject", lease: L, reason: "backend storage lost" }],
  },
  {
    row: "retiredLost",
    name: "ACTIVE on a retired backend: close",
    s: { chain: A(), placements: { [L]: confirmed("old") }, retired: ["old"] },
    actions: [{ kind: "close", lease: L, reason: "backend storage lost" }],
  },
  {
    row: "retirementUnproven",
    name: "recordless ACTIVE after an unproven retirement: close as lost, never provision",
    s: { chain: A(), retirementUnproven: true },
    actions: [{ kind: "close", lease: L, reason: "workload lost" }],
  },
  {
    row: "unusable",
    name: "an unusable record",
    s: { chain: A(), placements: { [L]: { kind: "unusable", updatedAt: NOW } }, backends: aReports("ready") },
    actions: [],
  },
  {
    row: "unusable",
    name: "an attempt without a valid operation id",
    s: { chain: P(), attempts: { [L]: attemptAt("a", 1, { invalid: true }) } },
    actions: [],
  },
  {
    row: "unusable",
    name: "a durable conflict, even when one candidate reports it ready",
    s: { chain: A(), placements: { [L]: quarantined("conflict", ["a", "b"]) }, backends: aReports("ready") },
    actions: [],
  },
  {
    row: "unusable",
    name: "two backends report a recordless lease: quarantine both",
    s: { chain: A(), backends: { a: { provisions: { [L]: "ready" } }, b: { provisions: { [L]: "ready" } } } },
    actions: [{ kind: "quarantine", lease: L, reason: "conflict", candidates: ["a", "b"] }],
  },
  {
    row: "attempt",
    name: "redeliver the exact operation to the attempted backend",
    s: { chain: P(), attempts: { [L]: attemptAt("b", 7) } },
    actions: [{ kind: "redeliver", lease: L, backend: "b", operationId: op(7) }],
  },
  {
    row: "attempt",
    name: "an ACTIVE lease's re-provision attempt, not reported: redeliver, never a new provision",
    s: { chain: A(), ...onA, attempts: { [L]: attemptAt("a", 3) } },
    actions: [{ kind: "redeliver", lease: L, backend: "a", operationId: op(3) }],
  },
  {
    row: "retained",
    name: "a peer retains the data of a recordless ACTIVE lease",
    s: { chain: A(), backends: { a: {}, b: { retentions: [L] } } },
    actions: [],
  },
  {
    row: "retained",
    name: "the owner retains it",
    s: { chain: P(), ...onA, backends: { a: { retentions: [L] }, b: {} } },
    actions: [],
  },
  {
    row: "untrusted",
    name: "named by a rejected response: quarantine with the owner",
    s: { chain: A(), ...onA, backends: { a: {}, b: { silent: "rejected", untrusted: [L] } } },
    actions: [{ kind: "quarantine", lease: L, reason: "untrusted_positive", candidates: ["a", "b"] }],
  },
  {
    row: "untrusted",
    name: "in both endpoints of its unchanged confirmed owner: keep the owner, act on nothing",
    s: {
      chain: A(),
      ...onA,
      backends: { a: { provisions: { [L]: "ready" }, retentions: [L], untrusted: [L] }, b: {} },
    },
    actions: [],
  },
  {
    row: "untrusted",
    name: "already quarantined with these candidates: nothing new",
    s: {
      chain: A(),
      placements: { [L]: quarantined("untrusted_positive", ["b"]) },
      backends: { a: {}, b: { silent: "rejected", untrusted: [L] } },
    },
    actions: [],
  },
  {
    row: "activeReady",
    name: "untrusted_positive sole candidate resolves on a complete view",
    s: {
      chain: A(),
      placements: { [L]: quarantined("untrusted_positive", ["a"]) },
      backends: aReports("ready"),
    },
    actions: [{ kind: "adopt_placement", lease: L, backend: "a" }, domain()],
  },
  {
    row: "disagrees",
    name: "a peer reports a lease confirmed elsewhere: quarantine both",
    s: {
      chain: A(),
      ...onA,
      backends: { a: { provisions: { [L]: "ready" } }, b: { provisions: { [L]: "ready" } } },
    },
    actions: [{ kind: "quarantine", lease: L, reason: "conflict", candidates: ["a", "b"] }],
  },
  {
    row: "disagrees",
    name: "an attempt elsewhere than the confirmed owner",
    s: { chain: A(), ...onA, attempts: { [L]: attemptAt("b") } },
    actions: [{ kind: "quarantine", lease: L, reason: "conflict", candidates: ["a", "b"] }],
  },
  {
    row: "ownerNotConfigured",
    name: "an owner no longer in the configuration",
    s: { chain: A(), placements: { [L]: confirmed("gone") } },
    actions: [{ kind: "lease_error", lease: L, reason: "owner_not_configured" }],
  },
  {
    row: "ownerSilent",
    name: "confirmed owner unreachable",
    s: { chain: A(), ...onA, backends: { a: { silent: "unreachable" }, b: {} } },
    actions: [],
  },
  {
    row: "ownerSilent",
    name: "an attempt at a fenced backend",
    s: { chain: P(), attempts: { [L]: attemptAt("a") }, backends: { a: { silent: "fenced" }, b: {} } },
    actions: [],
  },
  {
    row: "billingPending",
    name: "acknowledged with every backend silent and data retained",
    s: {
      chain: P({ skus: [BILLING_SKU] }),
      backends: { a: { silent: "unreachable" }, b: { retentions: [L] } },
    },
    actions: [{ kind: "acknowledge", lease: L }],
  },
  {
    row: "billingActive",
    name: "an earlier deployment failed: still nothing",
    s: { chain: A({ skus: [BILLING_SKU] }), ...onA, backends: aReports("failed") },
    actions: [],
  },
  {
    row: "pendingProvision",
    name: "mixed billing-only and deployable SKUs take the normal path",
    s: { chain: P({ skus: [BILLING_SKU, lease(99)] }) },
    actions: [{ kind: "provision", lease: L, target: { scope: ["a", "b"] }, payload: "none" }],
  },
  // Refinements of the seed's prose.
  {
    row: "recordlessUnadmitted",
    name: "PENDING before the inventory baseline exists",
    s: { chain: P(), baseline: false },
    actions: [],
  },
  {
    row: "recordlessUnadmitted",
    name: "recordless ACTIVE on a partial sweep",
    s: { chain: A(), backends: { a: {}, b: { silent: "fenced" } } },
    actions: [],
  },
  {
    row: "recordlessUnadmitted",
    name: "one report of a recordless lease on a partial sweep",
    s: { chain: P(), backends: { a: { provisions: { [L]: "ready" } }, b: { silent: "unreachable" } } },
    actions: [],
  },
  {
    row: "pendingReady",
    name: "one report of a recordless lease on a complete view: adopt, then acknowledge",
    s: { chain: P(), backends: aReports("ready") },
    actions: [
      { kind: "adopt_placement", lease: L, backend: "a" },
      { kind: "acknowledge", lease: L },
    ],
  },
  {
    row: "activeNoPayloadSource",
    name: "recordless ACTIVE with a meta_hash and no payload: retried next sweep",
    s: { chain: A({ hash: true }) },
    actions: [],
  },
  {
    row: "activeOtherStatus",
    name: "deprovisioning: no lifecycle action, no custom domains",
    s: { chain: A(), ...onA, backends: aReports("deprovisioning") },
    actions: [],
  },
];

function forLease(actions: readonly Action[], l: string): Action[] {
  return actions.filter((a) => a.lease === l);
}

describe("reconcile plan: the State Matrix row by row", () => {
  it("every row of the matrix has a case", () => {
    const covered = new Set(CASES.map((c) => c.row));
    const missing = (Object.keys(ROWS) as Row[]).filter((r) => !covered.has(r)).map((r) => ROWS[r]);
    assert.deepEqual(missing, []);
  });

  for (const c of CASES) {
    it(`${ROWS[c.row]} — ${c.name}`, () => {
      const p = plan(situation(c.s));
      assert.equal(p.decisions.get(L), c.row, `decided by ${p.decisions.get(L)}`);
      assert.deepEqual(forLease(p.actions, L), c.actions);
      assert.deepEqual(
        p.skips.filter((s) => s.lease === L),
        c.skips ?? [],
      );
    });
  }
});

describe("reconcile plan: custom domains only where the owner's differ", () => {
  const web = { service: "web", domain: "app.example.com" };
  const api = { service: "api", domain: "api.example.com" };
  const sweep = (chain: CustomDomain[] | undefined, reported: CustomDomain[] | undefined) => {
    const obs: ProvisionObservation = { status: "ready" };
    if (reported !== undefined) obs.customDomains = reported;
    const opts = chain === undefined ? {} : { domains: chain };
    const p = plan(situation({ chain: A(opts), ...onA, backends: aReports(obs) }));
    assert.equal(p.decisions.get(L), "activeReady");
    return forLease(p.actions, L);
  };

  it("the owner reports the chain's domains: nothing to send", () => {
    assert.deepEqual(sweep([web, api], [api, web]), []);
    assert.deepEqual(sweep(undefined, []), []);
    assert.deepEqual(sweep([], [{ service: "web", domain: "" }]), []);
  });

  it("the owner reports other domains: one action to its owner", () => {
    assert.deepEqual(sweep([web], []), [domain()]);
    assert.deepEqual(sweep(undefined, [web]), [domain()]);
    assert.deepEqual(sweep([web], [{ service: "web", domain: "old.example.com" }]), [domain()]);
    assert.deepEqual(sweep([web], [{ service: "api", domain: web.domain }]), [domain()]);
  });

  it("the owner does not report them (an older backend): one action, as before", () => {
    assert.deepEqual(sweep([web], undefined), [domain()]);
    assert.deepEqual(sweep(undefined, undefined), [domain()]);
  });

  it("an in-flight workload with matching domains sends nothing either", () => {
    const p = plan(
      situation({
        chain: A({ domains: [web] }),
        ...onA,
        backends: aReports({ status: "restarting", customDomains: [web] }),
      }),
    );
    assert.equal(p.decisions.get(L), "activeRestarting");
    assert.deepEqual(forLease(p.actions, L), []);
  });
});

describe("reconcile plan: a PENDING lease whose provision failed", () => {
  // settleOperation places the lease on the backend that reported the failure (it keeps
  // the failed record) while the rejection is on its way to the chain.
  it("is not new work for another backend while the failed one is silent", () => {
    const p = plan(
      situation({
        chain: P(),
        placements: { [L]: confirmed("a") },
        backends: { a: { silent: "unreachable" }, b: {} },
      }),
    );
    assert.equal(p.decisions.get(L), "ownerSilent");
    assert.deepEqual(forLease(p.actions, L), []);
  });

  it("is rejected again once the failed backend answers with its failed record", () => {
    const p = plan(
      situation({
        chain: P(),
        placements: { [L]: confirmed("a") },
        backends: { a: { provisions: { [L]: "failed" } }, b: {} },
      }),
    );
    assert.equal(p.decisions.get(L), "pendingFailed");
    assert.deepEqual(
      forLease(p.actions, L).map((a) => a.kind),
      ["reject"],
    );
  });
});

describe("reconcile plan: the destructive passes and their gates", () => {
  const prune: Action = { kind: "placement_prune_candidate", gate: REREAD_GATE, lease: L };
  const dropPayload: Action = { kind: "payload_cleanup_candidate", gate: REREAD_GATE, lease: L };

  it("payload cleanup: a payload whose lease is not live, with no backend answering", () => {
    const p = plan(situation({ payloads: [L], backends: { a: { silent: "unreachable" } } }));
    assert.deepEqual(p.actions, [dropPayload]);
  });

  it("payload cleanup leaves a live lease's payload", () => {
    const p = plan(situation({ chain: P({ hash: true }), payloads: [L] }));
    assert.ok(!p.actions.some((a) => a.kind === "payload_cleanup_candidate"));
  });

  it("placement pruning: owner answered, holds nothing, past the grace window", () => {
    assert.deepEqual(plan(situation({ ...onA })).actions, [prune]);
  });

  const pruneSkips: [string, Situation, CleanupSkip["reason"]][] = [
    [
      "the owner did not answer",
      { ...onA, backends: { a: { silent: "unreachable" }, b: {} } },
      "backend_silent",
    ],
    [
      "a conflict candidate did not answer",
      { placements: { [L]: quarantined("conflict", ["a", "c"]) } },
      "backend_silent",
    ],
    ["the owner still retains it", { ...onA, backends: { a: { retentions: [L] }, b: {} } }, "on_backend"],
    ["an attempt is in flight", { ...onA, attempts: { [L]: attemptAt("a") } }, "in_flight"],
    [
      "the record is younger than the grace window",
      { placements: { [L]: confirmed("a", NOW - GRACE_MS + 1) } },
      "grace_window",
    ],
    [
      "the record is unusable",
      { placements: { [L]: { kind: "unusable", updatedAt: 0 } } },
      "record_unusable",
    ],
  ];
  for (const [name, s, reason] of pruneSkips) {
    it(`placement pruning skips when ${name}`, () => {
      const p = plan(situation(s));
      assert.ok(!p.actions.some((a) => a.kind === "placement_prune_candidate"));
      assert.ok(
        p.skips.some((k) => k.pass === "placement" && k.reason === reason),
        JSON.stringify(p.skips),
      );
    });
  }

  it("a degraded sweep still tears down orphans, only on backends that answered", () => {
    const M = lease(2);
    const p = plan(
      situation({
        placements: { [L]: confirmed("b"), [M]: confirmed("a") },
        backends: { a: { provisions: { [M]: "ready" } }, b: { silent: "unreachable" } },
      }),
    );
    assert.deepEqual(
      p.actions.filter((a) => a.kind === "orphan_deprovision_candidate"),
      [
        {
          kind: "orphan_deprovision_candidate",
          gate: REREAD_GATE,
          lease: M,
          backend: "a",
          retireAttempt: false,
        },
      ],
    );
    assert.equal(p.complete, false);
    assert.deepEqual(p.answered, ["a"]);
  });

  it("an attempt of an absent lease at a silent backend is skipped, not torn down", () => {
    const p = plan(
      situation({ attempts: { [L]: attemptAt("b") }, backends: { a: {}, b: { silent: "fenced" } } }),
    );
    assert.deepEqual(p.actions, []);
    assert.deepEqual(p.skips, [{ pass: "orphan", lease: L, reason: "backend_silent" }]);
  });

  it("untrusted membership of an ended lease is no orphan evidence", () => {
    const p = plan(situation({ backends: { a: { silent: "rejected", untrusted: [L] } } }));
    assert.deepEqual(p.actions, []);
    assert.deepEqual(p.skips, [{ pass: "orphan", lease: L, reason: "untrusted" }]);
  });

  it("every destructive action is a candidate waiting on the exact re-read", () => {
    const p = plan(situation({ ...onA, payloads: [L], attempts: { [lease(3)]: attemptAt("b") } }));
    const destructive = p.actions.filter((a) => a.kind.endsWith("_candidate"));
    assert.equal(destructive.length, 3);
    for (const a of destructive) assert.equal("gate" in a && a.gate, REREAD_GATE);
  });

  it("the re-read gate admits only CLOSED, REJECTED and EXPIRED", () => {
    for (const s of ["LEASE_STATE_CLOSED", "LEASE_STATE_REJECTED", "LEASE_STATE_EXPIRED"])
      assert.equal(rereadPermitsDestruction(s), true, s);
    for (const s of [
      undefined,
      "LEASE_STATE_PENDING",
      "LEASE_STATE_ACTIVE",
      "LEASE_STATE_UNSPECIFIED",
      "6",
      "",
    ])
      assert.equal(rereadPermitsDestruction(s), false, String(s));
  });

  it("projection actions come first, destructive candidates last", () => {
    const M = lease(2);
    const p = plan(
      situation({
        chain: [chainLease(M, "PENDING")],
        attempts: { [M]: attemptAt("a") },
        payloads: [L],
        backends: { a: { provisions: { [M]: "ready" } }, b: {} },
      }),
    );
    assert.deepEqual(
      p.actions.map((a) => a.kind),
      ["confirm_attempt", "acknowledge", "payload_cleanup_candidate"],
    );
  });
});
