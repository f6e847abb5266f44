import { isBillingOnlyLease } from "./chain-state.ts";
import { type Evidence, recordBackends, union } from "./evidence.ts";
import type { Row } from "./rows.ts";
import type {
  Action,
  ChainLeaseView,
  CustomDomain,
  PayloadSource,
  PlacementView,
  PlanInput,
  ProvisionObservation,
  QuarantineReason,
} from "./types.ts";

/** The row that decided one live lease, and what it does this sweep. */
export interface Decision {
  row: Row;
  actions: Action[];
}

/** Reasons the plan writes on chain (curated: a tenant reads them). */
export const REASONS = {
  provisioningFailed: "provisioning failed",
  failedRepeatedly: "workload failed repeatedly",
  storageLost: "backend storage lost",
  lost: "workload lost",
} as const;

/** Inventory statuses that mean the backend finished working on the provision. */
const SETTLED = new Set(["ready", "failed"]);
const ACTIVE_ROWS: Readonly<Record<string, Row>> = {
  provisioning: "activeProvisioning",
  ready: "activeReady",
  restarting: "activeRestarting",
  updating: "activeUpdating",
};

interface Ctx {
  input: PlanInput;
  ev: Evidence;
  lease: ChainLeaseView;
  pending: boolean;
}

/**
 * One PENDING or ACTIVE lease, by the seed's precedence: billing-only first; then a placement
 * lost with a retired backend; then the placement-safety rows (unusable records, untrusted
 * membership, quarantine, unconfigured or silent owners, contradicting reports, retained data);
 * then unresolved attempts; then the normal state rows on the lease's one backend.
 */
export function decideLive(
  input: PlanInput,
  ev: Evidence,
  lease: ChainLeaseView,
  pending: boolean,
): Decision {
  const c: Ctx = { input, ev, lease, pending };
  const id = lease.uuid;
  if (isBillingOnlyLease(lease, input.billingOnlySkus)) {
    return pending
      ? { row: "billingPending", actions: [{ kind: "acknowledge", lease: id }] }
      : { row: "billingActive", actions: [] };
  }
  const placement = input.store.placements.get(id);
  const attempt = input.store.attempts.get(id);
  if (placement?.kind === "confirmed" && input.store.retiredBackends.has(placement.owner)) {
    return { row: "retiredLost", actions: [end(c, REASONS.storageLost)] };
  }
  if (placement?.kind === "unusable" || (attempt !== undefined && attempt.operationId === undefined)) {
    return { row: "unusable", actions: [] };
  }
  const record = union(recordBackends(placement), attempt === undefined ? [] : [attempt.backend]);
  const untrusted = ev.untrusted(id);
  if (untrusted.length > 0) {
    // A lease listed in both endpoints of its unchanged confirmed owner keeps that owner;
    // it is only fenced for this sweep. Anything else is quarantined durably.
    const sameOwner =
      placement?.kind === "confirmed" &&
      attempt === undefined &&
      untrusted.every((u) => u.overlap && u.backend === placement.owner);
    if (sameOwner) return { row: "untrusted", actions: [] };
    const candidates = union(
      record,
      untrusted.map((u) => u.backend),
    );
    return { row: "untrusted", actions: quarantine(id, "untrusted_positive", candidates, placement) };
  }
  let adopted: Action[] = [];
  if (placement?.kind === "quarantined") {
    const sole = selfResolved(c, placement);
    if (sole === undefined) {
      const candidates = union(record, ev.reporters(id), ev.retainers(id));
      return { row: "unusable", actions: quarantine(id, placement.reason, candidates, placement) };
    }
    adopted = [{ kind: "adopt_placement", lease: id, backend: sole }];
  }
  if (record.some((b) => !ev.configured(b))) {
    return {
      row: "ownerNotConfigured",
      actions: [{ kind: "lease_error", lease: id, reason: "owner_not_configured" }],
    };
  }
  if (record.some((b) => !ev.answeredBy(b))) return { row: "ownerSilent", actions: [] };
  const reporters = ev.reporters(id);
  const outside = reporters.filter((b) => !record.includes(b));
  if (record.length > 1 || (record.length === 1 && outside.length > 0)) {
    return { row: "disagrees", actions: quarantine(id, "conflict", union(record, reporters), placement) };
  }
  if (ev.retainers(id).length > 0) return { row: "retained", actions: [] };
  if (attempt !== undefined) {
    const obs = ev.observation(attempt.backend, id);
    if (obs === undefined) {
      return {
        row: "attempt",
        actions: [
          { kind: "redeliver", lease: id, backend: attempt.backend, operationId: attempt.operationId! },
        ],
      };
    }
    const confirm: Action[] = SETTLED.has(obs.status)
      ? [{ kind: "confirm_attempt", lease: id, backend: attempt.backend, operationId: attempt.operationId! }]
      : [];
    return onOwner(c, attempt.backend, obs, confirm);
  }
  if (record.length === 1) return onOwner(c, record[0]!, ev.observation(record[0]!, id), adopted);
  return recordless(c, reporters);
}

/**
 * An untrusted_positive quarantine with one candidate resolves when the complete topology
 * answered, that candidate is the lease's only trusted reporter, and every peer shows absence.
 */
function selfResolved(c: Ctx, q: Extract<PlacementView, { kind: "quarantined" }>): string | undefined {
  const id = c.lease.uuid;
  if (q.reason !== "untrusted_positive" || q.candidates.length !== 1 || !c.ev.complete) return undefined;
  if (c.input.store.attempts.has(id)) return undefined;
  const sole = q.candidates[0]!;
  const seen = union(c.ev.reporters(id), c.ev.retainers(id));
  return seen.length === 1 && seen[0] === sole && c.ev.reporters(id).length === 1 ? sole : undefined;
}

/** A lease with no record and no attempt. */
function recordless(c: Ctx, reporters: readonly string[]): Decision {
  const id = c.lease.uuid;
  if (reporters.length > 1)
    return { row: "unusable", actions: quarantine(id, "conflict", union(reporters), undefined) };
  if (reporters.length === 1) {
    // A positive report with every peer answering absence locates the lease.
    if (!c.ev.complete) return { row: "recordlessUnadmitted", actions: [] };
    const owner = reporters[0]!;
    const adopt: Action = { kind: "adopt_placement", lease: id, backend: owner };
    return onOwner(c, owner, c.ev.observation(owner, id), [adopt]);
  }
  const store = c.input.store;
  if (!store.baseline) return { row: "recordlessUnadmitted", actions: [] };
  if (c.pending) {
    if (c.lease.metaHash !== "" && !store.payloads.has(id))
      return { row: "pendingAwaitPayload", actions: [] };
    // Genuinely new work may go to any backend that answered both inventories.
    if (c.ev.answered.length === 0) return { row: "recordlessUnadmitted", actions: [] };
    const row: Row = c.lease.metaHash === "" ? "pendingProvision" : "pendingProvisionStored";
    const payload: PayloadSource = store.payloads.has(id) ? "stored" : "none";
    return { row, actions: [{ kind: "provision", lease: id, target: { scope: c.ev.answered }, payload }] };
  }
  // Recordless ACTIVE work needs the complete current view: a silent backend may hold it.
  if (!c.ev.complete) return { row: "recordlessUnadmitted", actions: [] };
  if (store.retirementUnproven) return { row: "retirementUnproven", actions: [end(c, REASONS.lost)] };
  if (c.lease.metaHash !== "" && !store.payloads.has(id))
    return { row: "activeNoPayloadSource", actions: [] };
  const payload: PayloadSource = store.payloads.has(id) ? "stored" : "none";
  return {
    row: "activeMissing",
    actions: [{ kind: "provision", lease: id, target: { scope: c.ev.answered }, payload }],
  };
}

/** The normal state rows, on the lease's one backend (which answered this sweep). */
function onOwner(c: Ctx, owner: string, obs: ProvisionObservation | undefined, before: Action[]): Decision {
  let pre = before;
  const id = c.lease.uuid;
  const hasPayload = c.input.store.payloads.has(id);
  const hashed = c.lease.metaHash !== "";
  const decide = (row: Row, ...actions: Action[]): Decision => ({ row, actions: [...pre, ...actions] });
  if (obs === undefined) {
    if (c.pending) {
      if (hashed && !hasPayload) return decide("pendingAwaitPayload");
      const payload: PayloadSource = hasPayload ? "stored" : "none";
      const row: Row = hashed ? "pendingProvisionStored" : "pendingProvision";
      return decide(row, { kind: "provision", lease: id, target: { backend: owner }, payload });
    }
    return decide("activeMissing", {
      kind: "provision",
      lease: id,
      target: { backend: owner },
      payload: rebuild(c),
    });
  }
  if (c.pending) {
    if (obs.status === "ready") return decide("pendingReady", { kind: "acknowledge", lease: id });
    if (obs.status === "failed") return decide("pendingFailed", end(c, REASONS.provisioningFailed));
    return decide("pendingInFlight");
  }
  if (obs.status === "failed") {
    if (obs.terminalBudget === "exhausted") return decide("activeFailed", end(c, REASONS.failedRepeatedly));
    return decide("activeFailed", { kind: "reprovision", lease: id, backend: owner, payload: rebuild(c) });
  }
  const row = ACTIVE_ROWS[obs.status];
  if (row === undefined) return decide("activeOtherStatus");
  if (row === "activeReady" && lacksLifecycle(c, owner))
    pre = [...pre, { kind: "restore_lifecycle", lease: id, backend: owner }];
  // Only where the owner's applied domains are unknown or differ from the chain's: a sweep
  // over a settled fleet then sends none (the feed's events push the changes as they happen).
  if (sameDomains(c.lease.customDomains ?? [], obs.customDomains)) return decide(row);
  return decide(row, { kind: "reconcile_custom_domain", lease: id, backend: owner });
}

/**
 * An ACTIVE lease whose confirmed record (this owner's, with no attempt) has no lifecycle id:
 * the owner's record, read in the act phase, gives it back.
 */
function lacksLifecycle(c: Ctx, owner: string): boolean {
  const p = c.input.store.placements.get(c.lease.uuid);
  return (
    p?.kind === "confirmed" &&
    p.owner === owner &&
    p.noLifecycle === true &&
    !c.input.store.attempts.has(c.lease.uuid)
  );
}

/** Whether the owner reported exactly the chain's domains (order and empty entries aside). */
function sameDomains(chain: readonly CustomDomain[], reported: readonly CustomDomain[] | undefined): boolean {
  if (reported === undefined) return false;
  if (chain.length === 0 && reported.length === 0) return true;
  const key = (ds: readonly CustomDomain[]) =>
    ds
      .filter((d) => d.domain !== "")
      .map((d) => JSON.stringify([d.service, d.domain]))
      .sort()
      .join(",");
  return key(chain) === key(reported);
}

/** An ACTIVE lease's payload for a provision on its owner: stored, or rebuilt from its latest release. */
function rebuild(c: Ctx): PayloadSource {
  if (c.input.store.payloads.has(c.lease.uuid)) return "stored";
  return c.lease.metaHash === "" ? "none" : "latest_release";
}

/** Reject a PENDING lease, close an ACTIVE one. */
function end(c: Ctx, reason: string): Action {
  return { kind: c.pending ? "reject" : "close", lease: c.lease.uuid, reason };
}

/** A quarantine action, unless the durable record already holds exactly this. */
function quarantine(
  lease: string,
  reason: QuarantineReason,
  candidates: readonly string[],
  existing: PlacementView | undefined,
): Action[] {
  if (existing?.kind === "quarantined" && candidates.every((b) => existing.candidates.includes(b))) return [];
  return [{ kind: "quarantine", lease, reason, candidates }];
}
