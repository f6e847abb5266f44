import type { InstanceSpec, LeaseItem } from "../substrate.ts";
import type { FailureStreak } from "../terminal-budget.ts";

/** What the journal stores, as its readers see it (rows decoded at the end of journal.ts). */
/** "maintenance": a restart or update is journaled and not settled (see maintenance/store.ts). */
export type LeaseHead = "operation" | "maintenance" | "close" | "none";
export type LeasePhase = "before_effects" | "started";
export type LeaseStatus = "provisioning" | "ready" | "failed" | "restarting" | "updating" | "deprovisioning";

export interface LeaseRecord {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  operationId: string;
  callbackUrl: string;
  lifecycleUrl: string;
  items: LeaseItem[];
  instances: InstanceSpec[];
  payload: Buffer | undefined;
  payloadHash: string | undefined;
  image: string;
  release: number;
  head: LeaseHead;
  phase: LeasePhase | undefined;
  status: LeaseStatus;
  failCount: number;
  reason: string | undefined;
  message: string | undefined;
  createdAtMs: number;
  admittedAtMs: number;
  generation: number;
  /** The consecutive-failure budget's state (terminal_budget). */
  streak: FailureStreak;
}

export type LeaseHeadRecord = Pick<
  LeaseRecord,
  | "leaseUuid"
  | "tenant"
  | "providerUuid"
  | "operationId"
  | "callbackUrl"
  | "lifecycleUrl"
  | "release"
  | "head"
  | "status"
  | "failCount"
  | "createdAtMs"
  | "generation"
  | "streak"
>;

export interface ReleaseRecord {
  version: number;
  operationId: string;
  image: string;
  status: "deploying" | "active" | "failed" | "superseded";
  manifest: Buffer | undefined;
  /** Service name → the immutable image reference it runs; undefined until resolved. */
  images: Readonly<Record<string, string>> | undefined;
  reason: string | undefined;
  message: string | undefined;
  createdAtMs: number;
}

export interface OutboxRow {
  seq: number;
  deliveryId: string;
  leaseUuid: string;
  /** Results (never coalesced): operation, maintenance, close; observations: lifecycle. */
  kind: "operation" | "maintenance" | "close" | "lifecycle";
  url: string;
  body: string;
  storageId: string;
  createdAtMs: number;
}

export interface CallbackFacts {
  status: "success" | "failed" | "deprovisioned";
  error: string;
  retained?: boolean;
}

/**
 * A recorded failure: tenant-safe reason and message. `platform` marks one the substrate
 * knows the platform caused whatever its reason says (it never counts toward terminal_budget).
 */
export type Failure = { reason: string; message: string; platform?: boolean };
