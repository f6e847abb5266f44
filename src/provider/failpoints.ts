import { armCrashPoints, crashPoint } from "../failpoints.ts";

/**
 * providerd's crash points for crash-safety tests (the mechanism: src/failpoints.ts).
 * Armed only through the environment at startup; providerd logs a warning when any is.
 */
export const FAILPOINTS = [
  /** The write-ahead attempt is durable; the backend has not been called. */
  "provision.after-attempt-commit",
  /** The backend answered 202 to the provision; its callback has not been applied. */
  "provision.after-accepted",
  /** A tenant upload was answered 202 (payload fsynced); provisioning has not started. */
  "upload.after-accepted",
  /** A restart/update is journaled and fsynced; the backend has not been called. */
  "maintenance.after-admit",
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/** Arms the points named in `spec` (comma-separated); an unknown name is an error. */
export function armFailpoints(spec: string | undefined): Failpoint[] {
  return armCrashPoints(spec, FAILPOINTS);
}

/** Dies here, at once and without cleanup, when `name` is armed. */
export function failpoint(name: Failpoint): void {
  crashPoint(name);
}
