import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  type Action,
  type AttemptView,
  type BackendView,
  type ChainLeaseView,
  classifyState,
  isDestructive,
  mergeListings,
  type PlacementView,
  type PlanInput,
  plan,
} from "../../../src/core/reconcile/index.ts";
import { applyToView, type World } from "./apply-to-view.ts";
import { BILLING_SKU, GRACE_MS, HASH, lease, NOW, op, SKU } from "./fixtures.ts";

/**
 * Properties of plan() over random worlds: three configured backends (each answered, fenced,
 * unreachable or rejected), records naming them or an unconfigured or retired backend, chain
 * listings in every state (doubled, as the non-atomic listings allow), and a chain truth the
 * re-read would report for leases the listings miss. Seeded; the seed is printed.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1500);
console.log(`reconcile plan properties: seed ${SEED} (FUZZ_SEED=${SEED} to replay), ${RUNS} runs`);

const CONFIGURED = ["a", "b", "c"] as const;
const NAMES = ["a", "b", "c", "gone", "old"] as const;
const LEASES = [1, 2, 3, 4, 5, 6].map(lease);
const full = (s: string) => (/^\d+$/.test(s) ? s : `LEASE_STATE_${s}`);

// Records name configured backends mostly; now and then an unconfigured or a retired one.
const name = fc.constantFrom("a", "a", "b", "b", "c", "c", ...NAMES.slice(3));
const placementArb: fc.Arbitrary<PlacementView | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  {
    weight: 4,
    arbitrary: fc.record({ owner: name, young: fc.boolean() }).map(
      ({ owner, young }): PlacementView => ({
        kind: "confirmed",
        owner,
        updatedAt: young ? NOW : NOW - 2 * GRACE_MS,
      }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({
        reason: fc.constantFrom("conflict" as const, "untrusted_positive" as const),
        candidates: fc.uniqueArray(name, { minLength: 1, maxLength: 3 }),
      })
      .map(
        (q): PlacementView => ({
          kind: "quarantined",
          ...q,
          candidates: q.candidates.sort(),
          updatedAt: NOW - 2 * GRACE_MS,
        }),
      ),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "unusable", updatedAt: 0 } as const) },
);
/** true about once in `n + 1` draws. */
const rarely = (n: number) => fc.integer({ min: 0, max: n }).map((k) => k === 0);
const perBackend = fc.record({
  provision: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.record({
        status: fc.constantFrom(
          "provisioning",
          "ready",
          "failed",
          "restarting",
          "updating",
          "deprovisioning",
        ),
        terminalBudget: fc.constantFrom(undefined, "exhausted" as const, "retry" as const),
      }),
    },
  ),
  retained: rarely(10),
  untrusted: rarely(25),
});
const leaseArb = fc.record({
  listed: fc.constantFrom(
    null,
    "PENDING",
    "ACTIVE",
    "ACTIVE",
    "PENDING",
    "CLOSED",
    "REJECTED",
    "UNSPECIFIED",
    "9",
  ),
  doubled: rarely(5),
  truthIfAbsent: fc.constantFrom(
    undefined,
    "CLOSED",
    "REJECTED",
    "EXPIRED",
    "PENDING",
    "ACTIVE",
    "UNSPECIFIED",
    "11",
  ),
  hash: fc.boolean(),
  billing: rarely(7),
  placement: placementArb,
  attempt: fc.option(fc.record({ backend: name, invalid: rarely(9) }), { freq: 3 }),
  payload: fc.boolean(),
  backends: fc.tuple(perBackend, perBackend, perBackend),
});
const worldArb = fc
  .record({
    leases: fc.tuple(...LEASES.map(() => leaseArb)),
    kinds: fc.tuple(
      ...CONFIGURED.map(() =>
        fc.constantFrom(...Array(8).fill("answered"), "fenced", "unreachable", "rejected"),
      ),
    ),
    baseline: rarely(5).map((b) => !b),
    retirementUnproven: rarely(5),
  })
  .map((w) => build(w.leases, w.kinds, w.baseline, w.retirementUnproven));

type LeaseSpec = typeof leaseArb extends fc.Arbitrary<infer T> ? T : never;

function build(specs: LeaseSpec[], kinds: string[], baseline: boolean, retirementUnproven: boolean): World {
  const chain: ChainLeaseView[] = [];
  const truth = new Map<string, string | undefined>();
  const placements = new Map<string, PlacementView>();
  const attempts = new Map<string, AttemptView>();
  const payloads = new Set<string>();
  const views = CONFIGURED.map(() => ({
    provisions: new Map<string, { status: string; terminalBudget?: "exhausted" | "retry" }>(),
    retentions: new Set<string>(),
    untrusted: new Set<string>(),
  }));
  specs.forEach((s, i) => {
    const id = LEASES[i]!;
    const view: ChainLeaseView = {
      uuid: id,
      state: "",
      skus: s.billing ? [BILLING_SKU] : [SKU],
      metaHash: s.hash ? HASH : "",
    };
    if (s.listed !== null) {
      chain.push({ ...view, state: full(s.listed) });
      if (s.doubled) chain.push({ ...view, state: "LEASE_STATE_PENDING" });
      truth.set(id, full(s.listed));
    } else {
      truth.set(id, s.truthIfAbsent === undefined ? undefined : full(s.truthIfAbsent));
    }
    if (s.placement !== undefined) placements.set(id, s.placement);
    if (s.attempt !== null) {
      attempts.set(id, {
        backend: s.attempt.backend,
        operationId: s.attempt.invalid ? undefined : op(i + 1),
        kind: "provision",
        createdAt: NOW - 1000,
      });
    }
    if (s.payload) payloads.add(id);
    s.backends.forEach((b, j) => {
      const v = views[j]!;
      if (b.provision !== null) v.provisions.set(id, b.provision);
      if (b.retained) v.retentions.add(id);
      // The collector's rule: a lease in both endpoints of one backend is untrusted there.
      if (b.untrusted || (b.provision !== null && b.retained)) v.untrusted.add(id);
    });
  });
  const backends = new Map<string, BackendView>();
  CONFIGURED.forEach((n, j) => {
    const kind = kinds[j]!;
    const v = views[j]!;
    if (kind === "answered") backends.set(n, { kind: "answered", ...v });
    else if (kind === "rejected") {
      // A rejected response: its raw positive membership survives only as untrusted.
      backends.set(n, {
        kind: "silent",
        reason: "rejected",
        untrusted: new Set([...v.provisions.keys(), ...v.retentions]),
      });
    } else
      backends.set(n, { kind: "silent", reason: kind as "fenced" | "unreachable", untrusted: new Set() });
  });
  return {
    truth,
    input: {
      now: NOW,
      chain,
      backends,
      store: {
        placements,
        attempts,
        payloads,
        baseline,
        retiredBackends: new Set(["old"]),
        retirementUnproven,
      },
      billingOnlySkus: new Set([BILLING_SKU]),
      placementGraceMs: GRACE_MS,
    },
  };
}

const live = (input: PlanInput, l: string) => {
  const s = mergeListings(input.chain).get(l)?.state;
  return s !== undefined && classifyState(s) !== "terminal";
};
const key = (a: Action) => JSON.stringify(a);
const check = (p: fc.IPropertyWithHooks<[World]> | fc.IProperty<[World]>) =>
  fc.assert(p, { seed: SEED, numRuns: RUNS });

describe("reconcile plan: properties", () => {
  it("never deletes anything that is not positively terminal on chain", () => {
    check(
      fc.property(worldArb, (world) => {
        const p = plan(world.input);
        for (const a of p.actions.filter(isDestructive)) {
          assert.ok(
            !live(world.input, a.lease),
            `destructive action on a lease listed live or unknown: ${key(a)}`,
          );
        }
        const { world: after } = applyToView(world, p.actions);
        for (const l of LEASES) {
          const t = world.truth.get(l);
          if (t !== undefined && classifyState(t) === "terminal") continue;
          // Not positively ended: its payload, its record and every workload survive.
          const { payloads, placements } = world.input.store;
          if (payloads.has(l)) assert.ok(after.input.store.payloads.has(l), `payload of ${l}`);
          if (placements.has(l)) assert.ok(after.input.store.placements.has(l), `record of ${l}`);
          // An attempt leaves only when its backend's positive report confirmed it.
          const attempt = world.input.store.attempts.get(l);
          if (attempt !== undefined && !after.input.store.attempts.has(l)) {
            const rec = after.input.store.placements.get(l);
            assert.ok(rec?.kind === "confirmed" && rec.owner === attempt.backend, `attempt of ${l}`);
          }
          for (const [n, v] of world.input.backends) {
            if (v.kind !== "answered" || !v.provisions.has(l)) continue;
            const w = after.input.backends.get(n)!;
            assert.ok(w.kind === "answered" && w.provisions.has(l), `workload of ${l} on ${n}`);
          }
        }
      }),
    );
  });

  it("never moves a lease to another backend", () => {
    check(
      fc.property(worldArb, ({ input }) => {
        const p = plan(input);
        for (const a of p.actions) {
          const target =
            a.kind === "provision"
              ? "backend" in a.target
                ? a.target.backend
                : undefined
              : a.kind === "reprovision" ||
                  a.kind === "redeliver" ||
                  a.kind === "reconcile_custom_domain" ||
                  a.kind === "confirm_attempt"
                ? a.backend
                : undefined;
          const placement = input.store.placements.get(a.lease);
          const attempt = input.store.attempts.get(a.lease);
          if (target !== undefined) {
            assert.equal(
              input.backends.get(target)?.kind,
              "answered",
              `acts through a silent backend: ${key(a)}`,
            );
            if (attempt !== undefined) assert.equal(target, attempt.backend, key(a));
            else if (placement?.kind === "confirmed") assert.equal(target, placement.owner, key(a));
            else if (placement?.kind === "quarantined")
              assert.deepEqual(placement.candidates, [target], key(a));
            else assert.equal(placement, undefined, key(a));
          }
          if (a.kind === "provision" && "scope" in a.target) {
            // Only genuinely new work is routed, and only onto backends that answered.
            assert.equal(placement, undefined, key(a));
            assert.equal(attempt, undefined, key(a));
            for (const [, v] of input.backends) {
              if (v.kind === "answered")
                assert.ok(!v.provisions.has(a.lease) && !v.retentions.has(a.lease), key(a));
              assert.ok(!v.untrusted.has(a.lease), key(a));
            }
            for (const b of a.target.scope) assert.equal(input.backends.get(b)?.kind, "answered", key(a));
          }
        }
      }),
    );
  });

  it("is idempotent: replanning the applied state proposes no new destructive action", () => {
    check(
      fc.property(worldArb, (world) => {
        const first = plan(world.input);
        const applied = applyToView(world, first.actions);
        const second = plan(applied.world.input);
        const refused = new Set(first.actions.filter(isDestructive).map(key));
        for (const k of applied.executed.map(key)) refused.delete(k);
        // Teardown of a quarantined lease's workloads empties its record; pruning that record
        // waits for a sweep in which no backend reports the lease (the on-backend gate).
        const tornDown = new Set(
          applied.executed.filter((a) => a.kind === "orphan_deprovision_candidate").map((a) => a.lease),
        );
        for (const a of second.actions.filter(isDestructive)) {
          if (applied.chainChanged.has(a.lease)) continue;
          if (a.kind === "placement_prune_candidate" && tornDown.has(a.lease)) continue;
          assert.ok(refused.has(key(a)), `new destructive action after applying the plan: ${key(a)}`);
        }
        // And a third sweep proposes only what the gate keeps refusing.
        const third = plan(applyToView(applied.world, second.actions).world.input);
        const refusedAgain = new Set(second.actions.filter(isDestructive).map(key));
        for (const a of third.actions.filter(isDestructive)) {
          if (applied.chainChanged.has(a.lease)) continue;
          assert.ok(refusedAgain.has(key(a)), `destructive action on the third sweep: ${key(a)}`);
        }
      }),
    );
  });

  it("is deterministic, leaves its input alone, and decides every listed lease", () => {
    check(
      fc.property(worldArb, ({ input }) => {
        const before = snapshot(input);
        const p = plan(input);
        assert.deepEqual(plan(input), p);
        assert.equal(snapshot(input), before);
        for (const l of mergeListings(input.chain).values()) {
          if (classifyState(l.state) !== "terminal") assert.ok(p.decisions.has(l.uuid), l.uuid);
        }
      }),
    );
  });
});

function snapshot(input: PlanInput): string {
  return JSON.stringify(input, (_k, v) => (v instanceof Map ? [...v] : v instanceof Set ? [...v] : v));
}
