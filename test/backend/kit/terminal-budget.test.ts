import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import { Journal } from "../../../src/backend/kit/journal/journal.ts";
import {
  afterFailure,
  afterReady,
  afterRequestedRestart,
  BUDGET_LIMITS,
  budgetView,
  type FailureStreak,
  NO_STREAK,
} from "../../../src/backend/kit/terminal-budget.ts";

const MIN = 60_000;
const OWN = "ContainerExited";
const PLATFORM = ["Unknown", "Interrupted", "ProvisionTimeout", "Internal", "ImagePullFailed"];

/** Folds a script of transitions at given minutes into a streak. */
type Step = { at: number; kind: "own" | "platform" | "ready" | "restart" };
function run(steps: Step[]): FailureStreak {
  let s = NO_STREAK;
  for (const step of steps) {
    const now = step.at * MIN;
    if (step.kind === "own") s = afterFailure(s, { reason: OWN }, now);
    else if (step.kind === "platform") s = afterFailure(s, { reason: "Unknown" }, now);
    else if (step.kind === "ready") s = afterReady(s, now);
    else s = afterRequestedRestart(s);
  }
  return s;
}

describe("terminal budget rules", () => {
  const cases: [string, Step[], ReturnType<typeof budgetView>][] = [
    ["no failure yet", [], { verdict: "retry", consecutive_failures: 0 }],
    ["one own failure", [{ at: 0, kind: "own" }], { verdict: "retry", consecutive_failures: 1 }],
    [
      "a quick burst of three never exhausts",
      [
        { at: 0, kind: "own" },
        { at: 1, kind: "own" },
        { at: 2, kind: "own" },
      ],
      { verdict: "retry", consecutive_failures: 3 },
    ],
    [
      "the third failure 30 minutes after the first exhausts",
      [
        { at: 0, kind: "own" },
        { at: 10, kind: "own" },
        { at: 30, kind: "own" },
      ],
      { verdict: "exhausted", consecutive_failures: 3 },
    ],
    [
      "two failures 30 minutes apart are not enough",
      [
        { at: 0, kind: "own" },
        { at: 40, kind: "own" },
      ],
      { verdict: "retry", consecutive_failures: 2 },
    ],
    [
      "a burst, then a fourth failure past 30 minutes exhausts",
      [
        { at: 0, kind: "own" },
        { at: 1, kind: "own" },
        { at: 2, kind: "own" },
        { at: 31, kind: "own" },
      ],
      { verdict: "exhausted", consecutive_failures: 4 },
    ],
    [
      "platform failures never count and never break the streak",
      [
        { at: 0, kind: "own" },
        { at: 5, kind: "platform" },
        { at: 10, kind: "own" },
        { at: 20, kind: "platform" },
        { at: 30, kind: "own" },
      ],
      { verdict: "exhausted", consecutive_failures: 3 },
    ],
    [
      "ready for less than ten minutes keeps the streak",
      [
        { at: 0, kind: "own" },
        { at: 1, kind: "ready" },
        { at: 10, kind: "own" },
        { at: 25, kind: "ready" },
        { at: 32, kind: "own" },
      ],
      { verdict: "exhausted", consecutive_failures: 3 },
    ],
    [
      "ready for ten minutes: the next failure starts a fresh streak",
      [
        { at: 0, kind: "own" },
        { at: 10, kind: "own" },
        { at: 11, kind: "ready" },
        { at: 21, kind: "own" },
      ],
      { verdict: "retry", consecutive_failures: 1 },
    ],
    [
      "ready for ten minutes: a platform failure starts a fresh, empty streak",
      [
        { at: 0, kind: "own" },
        { at: 1, kind: "ready" },
        { at: 11, kind: "platform" },
      ],
      { verdict: "retry", consecutive_failures: 0 },
    ],
    [
      "a requested restart resets an exhausted streak",
      [
        { at: 0, kind: "own" },
        { at: 15, kind: "own" },
        { at: 30, kind: "own" },
        { at: 31, kind: "restart" },
      ],
      { verdict: "retry", consecutive_failures: 0 },
    ],
    [
      "after a reset the 30 minutes count from the new first failure",
      [
        { at: 0, kind: "own" },
        { at: 20, kind: "restart" },
        { at: 25, kind: "own" },
        { at: 40, kind: "own" },
        { at: 50, kind: "own" },
      ],
      { verdict: "retry", consecutive_failures: 3 },
    ],
  ];
  for (const [name, steps, expected] of cases) {
    it(name, () => assert.deepEqual(budgetView(run(steps)), expected));
  }

  it("counts only the tenant's own workload failing", () => {
    for (const reason of ["ContainerExited", "HealthCheckFailed"]) {
      assert.equal(afterFailure(NO_STREAK, { reason }, 0).failures, 1, reason);
    }
    for (const reason of [...PLATFORM, "ContainerStartFailed", "RestartFailed", "Closed"]) {
      assert.equal(afterFailure(NO_STREAK, { reason }, 0).failures, 0, reason);
    }
  });

  it("never counts a failure the substrate attributes to the platform", () => {
    const s = afterFailure(NO_STREAK, { reason: "ContainerExited", platform: true }, 0);
    assert.deepEqual(budgetView(s), { verdict: "retry", consecutive_failures: 0 });
  });

  it("holds its invariants over random histories (seeded)", () => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
    console.log(`terminal budget property seed: ${seed}`);
    const step = fc.record({
      gap: fc.integer({ min: 0, max: 20 }),
      kind: fc.constantFrom<Step["kind"]>("own", "platform", "ready", "restart"),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (raw) => {
        let at = 0;
        const steps: Step[] = [];
        for (const r of raw) {
          at += r.gap;
          steps.push({ at, kind: r.kind });
        }
        const s = run(steps);
        // Exhausted needs three counted failures spanning 30 minutes.
        if (s.exhausted) {
          assert.ok(s.failures >= BUDGET_LIMITS.failures);
          assert.ok(at * MIN - (s.startedAtMs ?? Number.POSITIVE_INFINITY) >= BUDGET_LIMITS.streakMs);
        }
        // Without own failures there is never a count.
        if (!steps.some((x) => x.kind === "own")) assert.equal(s.failures, 0);
        // A platform failure never raises the count.
        const plus = afterFailure(s, { reason: "Unknown" }, (at + 1) * MIN);
        assert.ok(plus.failures <= s.failures);
      }),
      { numRuns: 300, seed },
    );
  });
});

describe("terminal budget in the journal", () => {
  const dir = mkdtempSync(join(tmpdir(), "fred-budget-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("follows settlements and runtime deaths, survives a reopen, and resets on request", () => {
    const path = join(dir, "journal.db");
    const storageId = randomUUID();
    const open = () => new Journal({ path, mode: "bind-or-verify", storageId, backendName: "b" });
    const lease = randomUUID();
    const provision = (j: Journal, nowMs: number) => {
      const op = randomUUID();
      const a = j.admitOperation({
        leaseUuid: lease,
        tenant: "manifest1budget",
        providerUuid: randomUUID(),
        operationId: op,
        callbackUrl: `http://h/cb?operation_id=${op}`,
        lifecycleUrl: `http://h/cb?lifecycle_id=${op}`,
        items: [{ sku: randomUUID(), quantity: 1 }],
        instances: [],
        payload: undefined,
        payloadHash: undefined,
        image: "",
        requestDigest: "d",
        nowMs,
      });
      const started = j.markStarted(lease, a.generation);
      assert.ok(started);
      return started;
    };
    const budget = (j: Journal) => budgetView((j.getLease(lease) as { streak: FailureStreak }).streak);
    const died = { reason: "ContainerExited", message: "exited" };

    let j = open();
    // Ready, then its own workload dies at minute 5: one.
    let s = provision(j, 0);
    assert.ok(j.settleSuccess(lease, s.generation, 0));
    assert.ok(j.recordRuntimeFailure(lease, undefined, died, 5 * MIN));
    assert.deepEqual(budget(j), { verdict: "retry", consecutive_failures: 1 });
    // Re-provisioned, dies again at 15 (ready 9 minutes), and a start failure at 35: exhausted.
    s = provision(j, 6 * MIN);
    assert.ok(j.settleSuccess(lease, s.generation, 6 * MIN));
    assert.ok(j.recordRuntimeFailure(lease, undefined, died, 15 * MIN));
    s = provision(j, 21 * MIN);
    assert.ok(j.settleFailure(lease, s.generation, died, 35 * MIN));
    assert.deepEqual(budget(j), { verdict: "exhausted", consecutive_failures: 3 });
    j.close();

    // Durable: a backend restart reads the same recorded verdict.
    j = open();
    assert.deepEqual(budget(j), { verdict: "exhausted", consecutive_failures: 3 });
    // A lost workload (platform) leaves it as it is; a requested restart resets it.
    s = provision(j, 36 * MIN);
    assert.ok(j.settleFailure(lease, s.generation, { reason: "Interrupted", message: "x" }, 37 * MIN));
    assert.deepEqual(budget(j), { verdict: "exhausted", consecutive_failures: 3 });
    assert.equal(j.resetFailureStreak(lease), true);
    assert.deepEqual(budget(j), { verdict: "retry", consecutive_failures: 0 });
    assert.equal(j.resetFailureStreak(randomUUID()), false);

    // Ten minutes ready: the next failure starts a fresh streak.
    s = provision(j, 40 * MIN);
    assert.ok(j.recordRuntimeFailure(lease, undefined, died, 40 * MIN) === false, "not ready yet");
    assert.ok(j.settleSuccess(lease, s.generation, 40 * MIN));
    assert.ok(j.recordRuntimeFailure(lease, undefined, died, 41 * MIN));
    s = provision(j, 42 * MIN);
    assert.ok(j.settleSuccess(lease, s.generation, 42 * MIN));
    assert.ok(j.recordRuntimeFailure(lease, undefined, died, 52 * MIN));
    assert.deepEqual(budget(j), { verdict: "retry", consecutive_failures: 1 });
    j.close();
  });
});
