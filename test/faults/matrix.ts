import type { Row } from "../../src/core/reconcile/index.ts";

/**
 * Where each State Matrix row (src/core/reconcile/rows.ts, the seed's table) is proven.
 * Every row is decided by the pure plan's table test (test/core/reconcile/plan.test.ts has
 * a case per row, and fails when one is missing); `process` names the test that drives the
 * row through real processes (devnet + backends + providerd), or `why` says why none does
 * yet. matrix.test.ts fails when a row is missing here or a named test does not exist.
 */
export interface ProcessTest {
  /** Repository-relative path of the test file. */
  file: string;
  /** The test's title, exactly as in the file. */
  test: string;
}

export type MatrixEntry = { process: ProcessTest } | { why: string };

const MISSED = "test/faults/missed-events.test.ts";
const BACKENDS = "test/faults/backends.test.ts";
const E2E_LIFECYCLE = "test/provider/e2e/lifecycle.test.ts";
const E2E_CRASH = "test/provider/e2e/crash.test.ts";

const LOST_PLACEMENT_TOOLS =
  "needs an operator retirement of a backend (placement repair tooling), plan-only";
const NO_INJECTION = "the mock backend cannot hold a workload in this status on demand, plan-only";

export const MATRIX: Record<Row, MatrixEntry> = {
  pendingAwaitPayload: {
    process: {
      file: E2E_LIFECYCLE,
      test: "a lease with meta_hash waits for its payload, then becomes ACTIVE with it",
    },
  },
  pendingProvisionStored: {
    process: {
      file: E2E_LIFECYCLE,
      test: "a lease with meta_hash waits for its payload, then becomes ACTIVE with it",
    },
  },
  pendingProvision: {
    process: {
      file: MISSED,
      test: "lease_created missed: leases created while providerd was down are provisioned after the restart",
    },
  },
  pendingReady: {
    process: {
      file: E2E_CRASH,
      test: "kill -9 after the backend accepted, before its callback: ACTIVE once after restart",
    },
  },
  pendingInFlight: {
    process: {
      file: MISSED,
      test: "a lease cancelled while its provision is in flight ends with no workload and no attempt",
    },
  },
  pendingFailed: {
    process: {
      file: E2E_LIFECYCLE,
      test: "a definite refusal from the backend rejects the lease with a curated reason",
    },
  },
  activeProvisioning: { why: NO_INJECTION },
  activeReady: {
    process: {
      file: MISSED,
      test: "lease_closed missed: a lease closed while providerd was down loses its workload, its neighbour keeps its own",
    },
  },
  activeRestarting: { why: NO_INJECTION },
  activeUpdating: { why: NO_INJECTION },
  activeFailed: {
    process: {
      file: "test/faults/budget.test.ts",
      test: "an exhausted terminal_budget closes the lease on chain with the curated reason",
    },
  },
  activeMissing: {
    process: {
      file: "test/provider/reconciler/sweep.test.ts",
      test: "re-provisions an ACTIVE lease whose workload vanished, on its owner",
    },
  },
  terminalOrphan: {
    process: {
      file: MISSED,
      test: "orphans: a closed lease's workload is torn down; one whose lease the chain does not know is kept",
    },
  },
  absentOrphan: {
    process: {
      file: MISSED,
      test: "orphans: a closed lease's workload is torn down; one whose lease the chain does not know is kept",
    },
  },
  unknownState: {
    process: {
      file: "test/provider/reconciler/chain-errors.test.ts",
      test: "destroys nothing unless an exact re-read says the lease ended",
    },
  },
  retiredLost: { why: LOST_PLACEMENT_TOOLS },
  retirementUnproven: { why: LOST_PLACEMENT_TOOLS },
  unusable: { why: "an unusable placement record cannot be written through providerd, plan-only" },
  attempt: {
    process: {
      file: E2E_CRASH,
      test: "kill -9 after the attempt commit, before the backend call: redelivered once with its operation id; leases created while down are provisioned",
    },
  },
  retained: { why: "retained leases arrive with the retention issue (h-rprov), plan-only" },
  untrusted: { why: "needs a backend answering an inventory the identity check rejects, plan-only" },
  disagrees: {
    why: "not driven through processes yet (a live lease provisioned behind providerd on a second backend would do it), plan-only",
  },
  ownerNotConfigured: { why: "needs a backend removed from config with leases placed on it, plan-only" },
  ownerSilent: {
    process: {
      file: BACKENDS,
      test: "one of three backends hangs: its read is abandoned at the deadline, only its lease is deferred",
    },
  },
  billingPending: {
    process: { file: E2E_LIFECYCLE, test: "a billing-only lease is acknowledged and never provisioned" },
  },
  billingActive: {
    why: "an ACTIVE billing-only lease has nothing for the sweep to do but skip it, plan-only",
  },
  recordlessUnadmitted: {
    why: "needs a placement store without a baseline, which providerd refuses to start on, plan-only",
  },
  activeNoPayloadSource: { why: "plan-only: needs a payload lease whose owner answered nothing" },
  activeOtherStatus: { why: NO_INJECTION },
};

function processOf(row: Row): ProcessTest {
  const entry = MATRIX[row];
  if (!("process" in entry)) throw new Error(`${row} has no process test`);
  return entry.process;
}

/** The situations beyond single rows, and their tests. */
export const SITUATIONS: Record<string, ProcessTest> = {
  "lease_created missed": processOf("pendingProvision"),
  "lease_closed missed": processOf("activeReady"),
  "lease closed while its provision was in flight": processOf("pendingInFlight"),
  "a backend loses a workload while ACTIVE": {
    file: BACKENDS,
    test: "a backend loses an ACTIVE workload: provisioned again on its owner, never moved",
  },
  "an ACTIVE workload crashes, re-provisioned with its volume data intact (Docker backend)": {
    file: "test/backend/docker/reprovision.test.ts",
    test: "a file written in the volume survives a failure, a failed re-provision and the next one",
  },
  "a workload that keeps crashing for 30+ simulated minutes": processOf("activeFailed"),
  "orphan on a backend": processOf("terminalOrphan"),
  "chain node unreachable or answering not-found during a sweep": processOf("unknownState"),
  "one of three backends silent during sweeps": processOf("ownerSilent"),
  "chaos run: lease bursts with closes while providerd and a backend are SIGKILLed": {
    file: "test/faults/chaos.test.ts",
    test: "converges after bursts, closes and kill -9 of providerd and a backend",
  },
  "the deprovisioned callback lost": {
    file: MISSED,
    test: "a lost `deprovisioned` callback: the sweep prunes the ended lease's placement instead",
  },
};
