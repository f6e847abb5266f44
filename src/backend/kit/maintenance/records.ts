import type { MaintenanceRequest } from "../../../core/backend-contract/index.ts";

/** A restart or update command as the maintenance journal stores it. */
export type MaintenanceKind = MaintenanceRequest["kind"];
export type MaintenancePhase = "pending" | "started" | "settled";

export interface MaintenanceRecord {
  maintenanceId: string;
  leaseUuid: string;
  seq: number;
  kind: MaintenanceKind;
  digest: string;
  admittedAt: string | undefined;
  admittedKey: string | undefined;
  /** update: the new manifest, until the command settles. */
  payload: Buffer | undefined;
  payloadHash: string | undefined;
  /** update: the new release's image (as admission derives it); restart: the current one. */
  image: string;
  sourceRelease: number;
  /** update: the release the command appended; restart: the source release. */
  targetRelease: number;
  phase: MaintenancePhase;
  outcome: "success" | "failed" | undefined;
  reason: string | undefined;
  message: string | undefined;
  createdAtMs: number;
}
