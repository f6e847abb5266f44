import type {
  AttemptView,
  BackendView,
  ChainLeaseView,
  CustomDomain,
  PlacementView,
  PlanInput,
  ProvisionObservation,
} from "../../../src/core/reconcile/index.ts";

/** Compact builders for PlanInput, so a table row reads like the situation it names. */
export const NOW = 1_800_000_000_000;
export const GRACE_MS = 10 * 60_000;
export const SKU = "0190f3a2-7c1e-7000-8000-00000000a001";
export const BILLING_SKU = "0190f3a2-7c1e-7000-8000-00000000b111";
export const HASH = "ab".repeat(32);

export function lease(n: number): string {
  return `0190f3a2-7c1e-7000-8000-${n.toString(16).padStart(12, "0")}`;
}
export function op(n: number): string {
  return `6f1d2c3b-4a59-4e68-8f7a-${n.toString(16).padStart(12, "0")}`;
}

export function chainLease(
  uuid: string,
  state: "PENDING" | "ACTIVE" | "CLOSED" | "REJECTED" | "EXPIRED" | "UNSPECIFIED" | string,
  opts: { hash?: boolean; skus?: string[]; domains?: CustomDomain[] } = {},
): ChainLeaseView {
  const known = ["PENDING", "ACTIVE", "CLOSED", "REJECTED", "EXPIRED", "UNSPECIFIED"];
  const view: ChainLeaseView = {
    uuid,
    state: known.includes(state) ? `LEASE_STATE_${state}` : state,
    skus: opts.skus ?? [SKU],
    metaHash: opts.hash === true ? HASH : "",
  };
  if (opts.domains !== undefined) view.customDomains = opts.domains;
  return view;
}

export type BackendSpec =
  | {
      provisions?: Record<string, string | ProvisionObservation>;
      retentions?: string[];
      untrusted?: string[];
    }
  | { silent: "fenced" | "unreachable" | "rejected"; untrusted?: string[] };

export function backendView(spec: BackendSpec): BackendView {
  if ("silent" in spec)
    return { kind: "silent", reason: spec.silent, untrusted: new Set(spec.untrusted ?? []) };
  const provisions = new Map<string, ProvisionObservation>();
  for (const [l, o] of Object.entries(spec.provisions ?? {}))
    provisions.set(l, typeof o === "string" ? { status: o } : o);
  return {
    kind: "answered",
    provisions,
    retentions: new Set(spec.retentions ?? []),
    untrusted: new Set(spec.untrusted ?? []),
  };
}

export function confirmed(owner: string, updatedAt = NOW - 2 * GRACE_MS): PlacementView {
  return { kind: "confirmed", owner, updatedAt };
}
export function quarantined(
  reason: "conflict" | "untrusted_positive",
  candidates: string[],
  updatedAt = NOW - 2 * GRACE_MS,
): PlacementView {
  return { kind: "quarantined", reason, candidates, updatedAt };
}
export function attemptAt(backend: string, n = 1, opts: { invalid?: boolean } = {}): AttemptView {
  return {
    backend,
    operationId: opts.invalid === true ? undefined : op(n),
    kind: "provision",
    createdAt: NOW - 60_000,
  };
}

export interface Situation {
  chain?: ChainLeaseView[];
  /** Configured backends in order; default: a and b, both answered and empty. */
  backends?: Record<string, BackendSpec>;
  placements?: Record<string, PlacementView>;
  attempts?: Record<string, AttemptView>;
  payloads?: string[];
  baseline?: boolean;
  retired?: string[];
  retirementUnproven?: boolean;
  now?: number;
}

export function situation(s: Situation): PlanInput {
  const backends = s.backends ?? { a: {}, b: {} };
  return {
    now: s.now ?? NOW,
    chain: s.chain ?? [],
    backends: new Map(Object.entries(backends).map(([name, spec]) => [name, backendView(spec)])),
    store: {
      placements: new Map(Object.entries(s.placements ?? {})),
      attempts: new Map(Object.entries(s.attempts ?? {})),
      payloads: new Set(s.payloads ?? []),
      baseline: s.baseline ?? true,
      retiredBackends: new Set(s.retired ?? []),
      retirementUnproven: s.retirementUnproven ?? false,
    },
    billingOnlySkus: new Set([BILLING_SKU]),
    placementGraceMs: GRACE_MS,
  };
}
