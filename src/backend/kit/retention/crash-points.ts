import { crashPoint } from "../../../failpoints.ts";

/**
 * Crash points at each step of retention where a `kill -9` leaves a distinct state (the
 * mechanism: src/failpoints.ts). The kit's steps are here; the btrfs steps between them
 * fire in the Docker backend's retained volumes. A backend arms these with its own points
 * (the Docker backend does; see its main.ts). "after-commit"/"after-consume" fire once the
 * settling transaction has committed and before anything is delivered.
 */
export const RETENTION_CRASH_POINTS = [
  /** Close with retain: the lease's containers are removed; nothing is snapshotted yet. */
  "retention.close.after-remove",
  /** Close with retain (btrfs): a volume's read-only snapshot exists; the live volume is not deleted. */
  "retention.close.after-snapshot",
  /** Close with retain: the row is active and the close complete; the callback is not delivered. */
  "retention.close.after-commit",
  /** Restore (btrfs): the destination's volume is a clone of the retained one, still owned by the source. */
  "retention.restore.after-clone",
  /** Restore: the data is adopted; the destination's workload is not created yet. */
  "retention.restore.after-adopt",
  /** Restore: the destination runs and the source row is consumed (reaping); the callback is not delivered. */
  "retention.restore.after-consume",
  /** Reaper: an expired row is marked reaping (durable); its snapshots are not deleted. */
  "retention.reap.after-mark",
  /** Reaper: the row's snapshots are deleted; the row is not removed. */
  "retention.reap.after-delete",
] as const;
export type RetentionCrashPoint = (typeof RETENTION_CRASH_POINTS)[number];

export function retentionCrashPoint(name: RetentionCrashPoint): void {
  crashPoint(name);
}

/** Fires `name` once the transaction the caller runs in has committed (its hook runs inside it). */
export function retentionCrashPointAfterCommit(name: RetentionCrashPoint): void {
  process.nextTick(() => crashPoint(name));
}
