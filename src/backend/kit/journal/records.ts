import type { InstanceSpec, LeaseItem } from "../substrate.ts";
import type { FailureStreak } from "../terminal-budget.ts";

/** What the journal stores, as its readers see it (rows decoded by statements.ts). */
export type LeaseHead = "operation" | "close" | "none";
export type LeasePhase = "before_effects" | "started";
export type LeaseStatus = "provisioning" | "ready" | "failed" | "deprovisioning";

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
  reason: string | undefined;
  message: string | undefined;
  createdAtMs: number;
}

export interface OutboxRow {
  seq: number;
  deliveryId: string;
  leaseUuid: string;
  kind: "operation" | "close" | "lifecycle";
  url: string;
  body: string;
  storageId: string;
  createdAtMs: number;
}
