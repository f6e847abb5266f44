import { FredError } from "./core/errors.ts";

/**
 * The one crash-point mechanism of every daemon (providerd, the backends). A test arms
 * named points through `FRED_FAILPOINTS=<name>[,<name>…]`; the process then kills itself
 * with SIGKILL the first time execution reaches one: the same as a `kill -9` or a power cut
 * at exactly that line, which a test cannot time from outside. Each daemon owns its list
 * of names and arms it from its composition root, logging a warning when any is armed.
 * providerd's list is at the end of this file; each backend keeps its list beside the
 * steps it names (backend/docker/maintenance/, backend/kit/retention/).
 */

const armed = new Set<string>();

/**
 * Arms the points named in `spec` (comma-separated) and returns them; a name not in
 * `known` is an error. Adds to what is armed: two daemons in one process (`fred up`) each
 * arm their own list.
 */
export function armCrashPoints<N extends string>(spec: string | undefined, known: readonly N[]): N[] {
  const names = (spec ?? "")
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  for (const n of names) {
    if (!(known as readonly string[]).includes(n)) {
      throw new FredError(
        "ERR_FAILPOINT",
        `FRED_FAILPOINTS: unknown crash point ${JSON.stringify(n)} (known: ${known.join(", ")})`,
      );
    }
  }
  for (const n of names) armed.add(n);
  return [...new Set(names)] as N[];
}

/** Dies here, at once and without cleanup, when `name` is armed. */
export function crashPoint(name: string): void {
  if (armed.has(name)) process.kill(process.pid, "SIGKILL");
}

/**
 * providerd's crash points for crash-safety tests.
 * Armed only through the environment at startup; providerd logs a warning when any is.
 */
export const PROVIDERD_FAILPOINTS = [
  /** The write-ahead attempt is durable; the backend has not been called. */
  "provision.after-attempt-commit",
  /** The backend answered 202 to the provision; its callback has not been applied. */
  "provision.after-accepted",
  /** A tenant upload was answered 202 (payload fsynced); provisioning has not started. */
  "upload.after-accepted",
  /** A restart/update is journaled and fsynced; the backend has not been called. */
  "maintenance.after-admit",
] as const;
export type Failpoint = (typeof PROVIDERD_FAILPOINTS)[number];

/** Arms providerd's points named in `spec` (comma-separated); an unknown name is an error. */
export function armFailpoints(spec: string | undefined): Failpoint[] {
  return armCrashPoints(spec, PROVIDERD_FAILPOINTS);
}

/** providerd's crash point: dies here, at once and without cleanup, when `name` is armed. */
export function failpoint(name: Failpoint): void {
  crashPoint(name);
}
