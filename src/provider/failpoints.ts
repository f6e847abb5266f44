import { FredError } from "../core/errors.ts";

/**
 * Crash points for crash-safety tests. `FRED_FAILPOINTS=<name>[,<name>…]` makes providerd
 * kill itself with SIGKILL the first time execution reaches a named point: the same as a
 * `kill -9` or a power cut at exactly that line, which a test cannot time from outside.
 * Armed only through the environment at startup; providerd logs a warning when any is.
 */
export const FAILPOINTS = [
  /** The write-ahead attempt is durable; the backend has not been called. */
  "provision.after-attempt-commit",
  /** The backend answered 202 to the provision; its callback has not been applied. */
  "provision.after-accepted",
  /** A tenant upload was answered 202 (payload fsynced); provisioning has not started. */
  "upload.after-accepted",
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

const armed = new Set<string>();

/** Arms the points named in `spec` (comma-separated); an unknown name is an error. */
export function armFailpoints(spec: string | undefined): Failpoint[] {
  armed.clear();
  const names = (spec ?? "")
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  for (const n of names) {
    if (!(FAILPOINTS as readonly string[]).includes(n)) {
      throw new FredError(
        "ERR_FAILPOINT",
        `FRED_FAILPOINTS: unknown crash point ${JSON.stringify(n)} (known: ${FAILPOINTS.join(", ")})`,
      );
    }
    armed.add(n);
  }
  return [...armed] as Failpoint[];
}

/** Dies here, at once and without cleanup, when `name` is armed. */
export function failpoint(name: Failpoint): void {
  if (armed.has(name)) process.kill(process.pid, "SIGKILL");
}
