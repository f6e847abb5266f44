/**
 * The State Matrix (README seed, "Reconciliation"), one entry per row, named
 * "<chain state> | <backend state>" as the seed's table reads. `plan()` reports the row
 * that decided each lease, so tests, logs and metrics can name it. The rows marked
 * `refines` are not in the seed's table: each spells out a case the seed states in its
 * prose (recordless leases on a partial view, a missing payload with no owner to read it
 * from, a status the matrix does not list).
 */
export const ROWS = {
  pendingAwaitPayload: "PENDING + meta_hash | Not provisioned, payload not uploaded",
  pendingProvisionStored: "PENDING + meta_hash | Not provisioned, payload stored",
  pendingProvision: "PENDING (no hash) | Not provisioned",
  pendingReady: "PENDING | Provisioned + ready",
  pendingInFlight:
    "PENDING | Provisioned + provisioning, restarting, updating, or any other status except ready or failed",
  pendingFailed: "PENDING | Provisioned + failed",
  activeProvisioning: "ACTIVE | Provisioned + provisioning",
  activeReady: "ACTIVE | Provisioned + ready",
  activeRestarting: "ACTIVE | Provisioned + restarting",
  activeUpdating: "ACTIVE | Provisioned + updating",
  activeFailed: "ACTIVE | Provisioned + failed",
  activeMissing: "ACTIVE | Not provisioned",
  terminalOrphan: "CLOSED/REJECTED/EXPIRED | Provisioned",
  absentOrphan: "Not found in the PENDING/ACTIVE sweep | Provisioned",
  unknownState: "UNSPECIFIED or unknown future state | Any",
  retiredLost: "ACTIVE / PENDING | Placement lost with a retired backend",
  retirementUnproven:
    "ACTIVE | Not provisioned, no placement row, and a retirement could not prove every live lease had one",
  unusable: "PENDING/ACTIVE | Placement conflict/unusable, or an attempt without valid operation metadata",
  attempt: "PENDING/ACTIVE | Any other unresolved attempt",
  retained: "PENDING/ACTIVE | Reported by a backend's /retentions",
  untrusted: "PENDING/ACTIVE | Positive membership from a rejected inventory endpoint (untrusted_positive)",
  disagrees: "PENDING/ACTIVE | Positive report disagrees with confirmed placement",
  ownerNotConfigured: "PENDING/ACTIVE | Confirmed owner is not configured",
  ownerSilent: "PENDING/ACTIVE | Owning backend did not answer",
  billingPending: "PENDING, billing-only | any",
  billingActive: "ACTIVE, billing-only | any",
  // refines: the seed's prose on recordless leases ("When both the placement record and
  // positive backend report are absent …").
  recordlessUnadmitted:
    "PENDING/ACTIVE | No record and no report, and the view cannot admit it (no baseline; ACTIVE on a partial sweep)",
  // refines: "If the owner reports none or cannot be read, the lease is retried".
  activeNoPayloadSource: "ACTIVE + meta_hash | Not provisioned, payload missing, no owner to rebuild it from",
  // refines: the matrix lists four ACTIVE statuses; any other (e.g. deprovisioning) is left alone.
  activeOtherStatus: "ACTIVE | Provisioned + any other status",
} as const;

export type Row = keyof typeof ROWS;

/** Rows whose outcome is "no action this sweep; retried on the next". */
export const DEFERRING_ROWS: ReadonlySet<Row> = new Set<Row>([
  "unknownState",
  "unusable",
  "retained",
  "untrusted",
  "disagrees",
  "ownerNotConfigured",
  "ownerSilent",
  "recordlessUnadmitted",
  "activeNoPayloadSource",
]);
