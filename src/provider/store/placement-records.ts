/**
 * The records of the placements room (src/provider/store/placements.ts) as callers see
 * them. Their rows, and how they are read, stay inside that room.
 */
export type AttemptKind = "provision" | "restore";

export interface Attempt {
  leaseUuid: string;
  backend: string;
  operationId: string;
  kind: AttemptKind;
  createdAt: number;
}

export interface Placement {
  leaseUuid: string;
  state: "confirmed" | "conflict";
  owner: string | undefined;
  /** The operation id that confirmed the owner: lifecycle callbacks must carry it. */
  lifecycleId: string | undefined;
  /** For a conflict: every backend that claimed the lease. */
  candidates: string[];
  updatedAt: number;
}

/**
 * One placement row as the reconciler's sweep reads every one of them: lease UUID (canonical
 * text), state, owner (null for a conflict), candidates (JSON text), updated_at, and 1 when
 * the row has no lifecycle id (else 0).
 */
export type PlacementTuple = [
  leaseUuid: string,
  state: Placement["state"],
  owner: string | null,
  candidates: string,
  updatedAt: number,
  noLifecycle: 0 | 1,
];

export type RecordResult = "recorded" | "lease-busy";

export type SettleResult =
  | { kind: "unknown-operation" }
  | { kind: "settled"; attempt: Attempt; placement: Placement | undefined };

export interface InventoryOutcome {
  confirmed: string[];
  conflicts: string[];
  /** Leases the backend reports that we have no record of (the reconciler decides). */
  unrecorded: string[];
}
