/**
 * What the reconciler's pure plan reads and what it decides. The collector (I/O) builds a
 * PlanInput from one sweep: the chain's PENDING/ACTIVE leases of this provider, one view per
 * configured backend (its paired /provisions + /retentions, or `silent`), and the placement
 * store. `plan()` turns it into actions; the act phase executes them under each lease's
 * serial queue. Lease and backend identities are plain strings: core imports no adapter.
 */

/** A lease as the PENDING/ACTIVE listings returned it. */
export interface ChainLeaseView {
  uuid: string;
  /**
   * The protobuf enum name (`LEASE_STATE_ACTIVE`, …). A value this build does not know
   * arrives as its number in text; the plan never infers anything from it.
   */
  state: string;
  /** SKU UUID of every item (billing-only is decided from these alone). */
  skus: readonly string[];
  /** Lowercase hex; "" when the lease has none. */
  metaHash: string;
  /** The items' custom domains (items without one left out); absent: none. */
  customDomains?: readonly CustomDomain[];
}

/** One item's custom domain, keyed by its service name ("" for an unnamed item). */
export interface CustomDomain {
  service: string;
  domain: string;
}

/** One row of a backend's /provisions, plus what GET /provisions/{uuid} added for failed ones. */
export interface ProvisionObservation {
  status: string;
  /** `terminal_budget.verdict`, when the collector read it; undefined = not reported. */
  terminalBudget?: "exhausted" | "retry";
  /**
   * The custom domains the backend reports it applied (from the row's `items`); undefined:
   * the backend does not report them (an older backend), so the sweep sends them as before.
   */
  customDomains?: readonly CustomDomain[];
}

/**
 * One configured backend in this sweep. `answered`: both inventories read completely, from
 * the pinned storage identity. `silent`: fenced, unreachable, or its response rejected; its
 * absence of a lease proves nothing. `untrusted` holds raw positive membership that cannot be
 * used as ownership or as absence: a lease listed in both endpoints of an answered backend, or
 * every lease a rejected response named.
 */
export type BackendView =
  | {
      kind: "answered";
      provisions: ReadonlyMap<string, ProvisionObservation>;
      retentions: ReadonlySet<string>;
      untrusted: ReadonlySet<string>;
    }
  | { kind: "silent"; reason: "fenced" | "unreachable" | "rejected"; untrusted: ReadonlySet<string> };

export type QuarantineReason = "conflict" | "untrusted_positive";

/** A durable placement record. */
export type PlacementView =
  | {
      kind: "confirmed";
      owner: string;
      updatedAt: number;
      /**
       * The record has no lifecycle id (an adopted placement, or one whose lifecycle a
       * teardown report retired while the lease lived): lifecycle callbacks, restarts and
       * updates cannot reach it until the owner's own record gives the id back.
       */
      noLifecycle?: true;
    }
  | { kind: "quarantined"; reason: QuarantineReason; candidates: readonly string[]; updatedAt: number }
  /** A record this build cannot read as an owner or a candidate set. */
  | { kind: "unusable"; updatedAt: number };

/** An unresolved write-ahead attempt. */
export interface AttemptView {
  backend: string;
  /** undefined: the row carries no valid operation id (nothing exact can be redelivered). */
  operationId: string | undefined;
  kind: "provision" | "restore";
  createdAt: number;
}

export interface StoreView {
  placements: ReadonlyMap<string, PlacementView>;
  attempts: ReadonlyMap<string, AttemptView>;
  /** Leases with a stored payload. */
  payloads: ReadonlySet<string>;
  /** A durable inventory baseline exists for the configured topology (bootstrap finished). */
  baseline: boolean;
  /** Backends an operator retired because their storage was lost. */
  retiredBackends: ReadonlySet<string>;
  /** A retirement could not prove that every live lease had a placement record. */
  retirementUnproven: boolean;
  /** Retained placements (their owner kept the lease's data on close), by lease. */
  retained?: ReadonlyMap<string, RetainedView>;
}

export interface RetainedView {
  owner: string;
  /** Consecutive complete sweeps whose /retentions of the owner did not list the lease. */
  misses: number;
  /** A restore of the data is admitted and not settled yet. */
  restoring: boolean;
}

export interface PlanInput {
  /** The sweep's time (ms since the epoch); the plan reads no clock. */
  now: number;
  chain: readonly ChainLeaseView[];
  /** Every configured backend, by name. A name missing here is not configured. */
  backends: ReadonlyMap<string, BackendView>;
  store: StoreView;
  billingOnlySkus: ReadonlySet<string>;
  /** Placement pruning leaves records younger than this alone. */
  placementGraceMs: number;
}

/** Where a provision goes: the lease's own backend, or (recordless PENDING) any of `scope`. */
export type ProvisionTarget = { backend: string } | { scope: readonly string[] };

/** What the provision sends: the stored payload, none, or the owner's latest active release. */
export type PayloadSource = "stored" | "none" | "latest_release";

export type CleanupPass = "orphan" | "payload" | "placement";

/** The gate every destructive action waits for: an exact chain re-read reports it ended. */
export const REREAD_GATE = "exact_reread_terminal";

export type Action =
  // Projection: durable evidence this sweep adds to the store before acting.
  | { kind: "confirm_attempt"; lease: string; backend: string; operationId: string }
  | { kind: "adopt_placement"; lease: string; backend: string }
  | { kind: "quarantine"; lease: string; reason: QuarantineReason; candidates: readonly string[] }
  // Retention bookkeeping (projection too): the owner's /retentions seen, missed, or learned.
  | { kind: "retention_seen"; lease: string; backend: string }
  | { kind: "retention_missed"; lease: string; backend: string; retire: boolean }
  | { kind: "adopt_retention"; lease: string; backend: string }
  // Lease lifecycle.
  | { kind: "acknowledge"; lease: string }
  | { kind: "reject"; lease: string; reason: string }
  | { kind: "close"; lease: string; reason: string }
  | { kind: "provision"; lease: string; target: ProvisionTarget; payload: PayloadSource }
  | { kind: "reprovision"; lease: string; backend: string; payload: PayloadSource }
  | { kind: "redeliver"; lease: string; backend: string; operationId: string }
  | { kind: "reconcile_custom_domain"; lease: string; backend: string }
  /** Take the lifecycle id from the owner's own record of the lease (GET provisions/{uuid}). */
  | { kind: "restore_lifecycle"; lease: string; backend: string }
  | { kind: "lease_error"; lease: string; reason: "owner_not_configured" }
  // Destructive candidates: executed only if the re-read passes REREAD_GATE.
  | {
      kind: "orphan_deprovision_candidate";
      gate: typeof REREAD_GATE;
      lease: string;
      backend: string;
      /** The lease's unresolved attempt is at this backend: retire it once it accepts. */
      retireAttempt: boolean;
    }
  | { kind: "payload_cleanup_candidate"; gate: typeof REREAD_GATE; lease: string }
  | { kind: "placement_prune_candidate"; gate: typeof REREAD_GATE; lease: string };

export type ActionKind = Action["kind"];
export type DestructiveAction = Extract<Action, { gate: typeof REREAD_GATE }>;

export function isDestructive(a: Action): a is DestructiveAction {
  return "gate" in a;
}

/** Why a destructive pass left something alone (fred_reconciler_cleanup_skips_total). */
export type SkipReason =
  | "unknown_chain_state"
  | "backend_silent"
  | "untrusted"
  | "on_backend"
  | "in_flight"
  | "grace_window"
  | "record_unusable"
  | "retained";

export interface CleanupSkip {
  pass: CleanupPass;
  lease: string;
  reason: SkipReason;
}
