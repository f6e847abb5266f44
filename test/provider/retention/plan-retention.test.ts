import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Action, type PlanInput, plan, type RetainedView } from "../../../src/core/reconcile/index.ts";
import {
  attemptAt,
  chainLease,
  confirmed,
  lease,
  quarantined,
  type Situation,
  situation,
} from "../../core/reconcile/fixtures.ts";

/**
 * The pure plan's retention rows, as a table: a retained placement is never pruned; it is
 * retired only after its owner's identity-checked /retentions missed it on two consecutive
 * complete sweeps (and no restore of it is in flight); a degraded sweep counts for nothing;
 * a recordless ended lease one backend retains is adopted as retained there.
 */
const L = lease(1);

function withRetained(s: Situation, retained: Record<string, RetainedView>): PlanInput {
  const input = situation(s);
  return { ...input, store: { ...input.store, retained: new Map(Object.entries(retained)) } };
}

const kept = (misses = 0, restoring = false): RetainedView => ({ owner: "a", misses, restoring });
const retentionActions = (input: PlanInput): Action[] =>
  plan(input).actions.filter((a) => a.kind.includes("retention") || a.kind === "placement_prune_candidate");

describe("reconcile plan: retained placements", () => {
  const onA = { placements: { [L]: confirmed("a") } };
  const rows: [string, PlanInput, Action[]][] = [
    [
      "listed by its owner, no misses: nothing to do",
      withRetained({ ...onA, backends: { a: { retentions: [L] }, b: {} } }, { [L]: kept() }),
      [],
    ],
    [
      "listed again after a miss: the count starts over",
      withRetained({ ...onA, backends: { a: { retentions: [L] }, b: {} } }, { [L]: kept(1) }),
      [{ kind: "retention_seen", lease: L, backend: "a" }],
    ],
    [
      "first complete sweep without it: one miss, kept",
      withRetained(onA, { [L]: kept() }),
      [{ kind: "retention_missed", lease: L, backend: "a", retire: false }],
    ],
    [
      "second consecutive complete sweep without it: retired",
      withRetained(onA, { [L]: kept(1) }),
      [{ kind: "retention_missed", lease: L, backend: "a", retire: true }],
    ],
    [
      "a restore of it is in flight: counted, never retired",
      withRetained(onA, { [L]: kept(1, true) }),
      [{ kind: "retention_missed", lease: L, backend: "a", retire: false }],
    ],
    [
      "another backend retains it, not the owner: still a miss of the owner",
      withRetained({ ...onA, backends: { a: {}, b: { retentions: [L] } } }, { [L]: kept(1) }),
      [{ kind: "retention_missed", lease: L, backend: "a", retire: true }],
    ],
    [
      "the owner is silent (degraded sweep): nothing counts",
      withRetained({ ...onA, backends: { a: { silent: "unreachable" }, b: {} } }, { [L]: kept(1) }),
      [],
    ],
    [
      "a peer is silent (degraded sweep): nothing counts, even with the owner answering",
      withRetained({ ...onA, backends: { a: {}, b: { silent: "fenced" } } }, { [L]: kept(1) }),
      [],
    ],
  ];
  for (const [name, input, expected] of rows) {
    it(name, () => {
      assert.deepEqual(retentionActions(input), expected);
    });
  }

  it("placement pruning skips a retained row (reason retained), whatever the backends say", () => {
    const p = plan(withRetained(onA, { [L]: kept() }));
    assert.ok(!p.actions.some((a) => a.kind === "placement_prune_candidate"));
    assert.ok(p.skips.some((k) => k.pass === "placement" && k.lease === L && k.reason === "retained"));
    // The same record without the retained mark is a prune candidate: the mark is what keeps it.
    assert.ok(plan(situation(onA)).actions.some((a) => a.kind === "placement_prune_candidate"));
  });

  it("a retained lease is never an orphan to deprovision", () => {
    const p = plan(withRetained({ ...onA, backends: { a: { retentions: [L] }, b: {} } }, { [L]: kept() }));
    assert.ok(!p.actions.some((a) => a.kind === "orphan_deprovision_candidate"));
  });
});

describe("reconcile plan: adopting a retention nobody recorded", () => {
  const adopt = (input: PlanInput) => plan(input).actions.filter((a) => a.kind === "adopt_retention");

  it("an ended, recordless lease one backend retains is adopted there", () => {
    assert.deepEqual(adopt(situation({ backends: { a: {}, b: { retentions: [L] } } })), [
      { kind: "adopt_retention", lease: L, backend: "b" },
    ]);
    assert.deepEqual(
      adopt(situation({ chain: [chainLease(L, "CLOSED")], backends: { a: { retentions: [L] }, b: {} } })),
      [{ kind: "adopt_retention", lease: L, backend: "a" }],
    );
  });

  it("a confirmed record of the same owner without the mark gets it (a lost retained callback)", () => {
    const s: Situation = { placements: { [L]: confirmed("a") }, backends: { a: { retentions: [L] }, b: {} } };
    assert.deepEqual(adopt(situation(s)), [{ kind: "adopt_retention", lease: L, backend: "a" }]);
    assert.deepEqual(adopt(withRetained(s, { [L]: kept() })), [], "already retained: nothing to adopt");
  });

  const refused: [string, Situation][] = [
    ["two backends retain it", { backends: { a: { retentions: [L] }, b: { retentions: [L] } } }],
    [
      "it is live on chain",
      { chain: [chainLease(L, "PENDING")], backends: { a: { retentions: [L] }, b: {} } },
    ],
    [
      "its chain state is unknown",
      { chain: [chainLease(L, "UNSPECIFIED")], backends: { a: { retentions: [L] } } },
    ],
    [
      "its placement record names another owner",
      { placements: { [L]: confirmed("b") }, backends: { a: { retentions: [L] }, b: {} } },
    ],
    [
      "its placement record is a conflict",
      {
        placements: { [L]: quarantined("conflict", ["a", "b"]) },
        backends: { a: { retentions: [L] }, b: {} },
      },
    ],
    ["it has an attempt", { attempts: { [L]: attemptAt("a") }, backends: { a: { retentions: [L] }, b: {} } }],
    ["a backend also runs it", { backends: { a: { retentions: [L] }, b: { provisions: { [L]: "ready" } } } }],
    ["the listing is untrusted", { backends: { a: { retentions: [L], untrusted: [L] }, b: {} } }],
  ];
  for (const [name, s] of refused) {
    it(`is not adopted when ${name}`, () => {
      assert.deepEqual(adopt(situation(s)), []);
    });
  }
});
