import {
  type Action,
  type BackendView,
  type ChainLeaseView,
  mergeListings,
  type PlacementView,
  type PlanInput,
  type ProvisionObservation,
  rereadPermitsDestruction,
} from "../../../src/core/reconcile/index.ts";

/**
 * What the world looks like after the act phase carried out a plan, for the property tests.
 * Pure, over a copy. `truth` is each lease's state on chain as an exact re-read would report
 * it (undefined: not found or unreadable); every destructive candidate runs only if it passes
 * the same gate the act phase uses. Backends are well behaved: an accepted provision shows up
 * as `provisioning`, a deprovision removes the workload, and the owner's `deprovisioned`
 * callback retires its confirmed placement.
 */
export interface World {
  input: PlanInput;
  truth: ReadonlyMap<string, string | undefined>;
}

export interface Applied {
  world: World;
  /** Destructive candidates the re-read gate let through. */
  executed: Action[];
  /** Leases whose chain state the plan changed (acknowledged, rejected, closed). */
  chainChanged: Set<string>;
}

export function applyToView(world: World, actions: readonly Action[]): Applied {
  const src = world.input;
  const chain = new Map<string, ChainLeaseView>([...mergeListings(src.chain)].map(([k, l]) => [k, { ...l }]));
  const truth = new Map(world.truth);
  const placements = new Map<string, PlacementView>(src.store.placements);
  const attempts = new Map(src.store.attempts);
  const payloads = new Set(src.store.payloads);
  const views = new Map<string, MutableView>();
  for (const [name, v] of src.backends) views.set(name, copyView(v));
  const executed: Action[] = [];
  const chainChanged = new Set<string>();
  let nextOp = 0x7000;
  const opId = () => `6f1d2c3b-4a59-4e68-8f7a-${(nextOp++).toString(16).padStart(12, "0")}`;
  const start = (lease: string, backend: string) => {
    attempts.set(lease, { backend, operationId: opId(), kind: "provision", createdAt: src.now });
    const v = views.get(backend);
    if (v?.kind === "answered") v.provisions.set(lease, { status: "provisioning" });
  };
  const endOnChain = (lease: string, state: string) => {
    chain.delete(lease);
    truth.set(lease, state);
    chainChanged.add(lease);
  };

  for (const a of actions) {
    switch (a.kind) {
      case "confirm_attempt":
        attempts.delete(a.lease);
        placements.set(a.lease, { kind: "confirmed", owner: a.backend, updatedAt: src.now });
        break;
      case "adopt_placement":
        placements.set(a.lease, { kind: "confirmed", owner: a.backend, updatedAt: src.now });
        break;
      case "quarantine":
        placements.set(a.lease, {
          kind: "quarantined",
          reason: a.reason,
          candidates: a.candidates,
          updatedAt: src.now,
        });
        break;
      case "acknowledge": {
        const l = chain.get(a.lease);
        if (l !== undefined) l.state = "LEASE_STATE_ACTIVE";
        truth.set(a.lease, "LEASE_STATE_ACTIVE");
        chainChanged.add(a.lease);
        break;
      }
      case "reject":
        endOnChain(a.lease, "LEASE_STATE_REJECTED");
        break;
      case "close":
        endOnChain(a.lease, "LEASE_STATE_CLOSED");
        break;
      case "provision":
        start(a.lease, "backend" in a.target ? a.target.backend : a.target.scope[0]!);
        break;
      case "reprovision":
        start(a.lease, a.backend);
        break;
      case "redeliver": {
        const v = views.get(a.backend);
        if (v?.kind === "answered") v.provisions.set(a.lease, { status: "provisioning" });
        break;
      }
      case "reconcile_custom_domain":
      case "lease_error":
        break;
      case "orphan_deprovision_candidate": {
        if (!rereadPermitsDestruction(truth.get(a.lease))) break;
        executed.push(a);
        const v = views.get(a.backend);
        if (v?.kind === "answered") v.provisions.delete(a.lease);
        if (a.retireAttempt && attempts.get(a.lease)?.backend === a.backend) attempts.delete(a.lease);
        const p = placements.get(a.lease);
        if (p?.kind === "confirmed" && p.owner === a.backend) placements.delete(a.lease);
        break;
      }
      case "payload_cleanup_candidate":
        if (!rereadPermitsDestruction(truth.get(a.lease))) break;
        executed.push(a);
        payloads.delete(a.lease);
        break;
      case "placement_prune_candidate":
        if (!rereadPermitsDestruction(truth.get(a.lease))) break;
        executed.push(a);
        placements.delete(a.lease);
        break;
    }
  }
  const input: PlanInput = {
    ...src,
    chain: [...chain.values()],
    backends: new Map([...views].map(([n, v]) => [n, v as BackendView])),
    store: { ...src.store, placements, attempts, payloads },
  };
  return { world: { input, truth }, executed, chainChanged };
}

type MutableView =
  | {
      kind: "answered";
      provisions: Map<string, ProvisionObservation>;
      retentions: Set<string>;
      untrusted: Set<string>;
    }
  | Extract<BackendView, { kind: "silent" }>;

function copyView(v: BackendView): MutableView {
  if (v.kind === "silent") return v;
  return {
    kind: "answered",
    provisions: new Map(v.provisions),
    retentions: new Set(v.retentions),
    untrusted: new Set(v.untrusted),
  };
}
