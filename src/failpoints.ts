import { FredError } from "./core/errors.ts";

/**
 * The one crash-point mechanism of every daemon (providerd, the backends). A test arms
 * named points through `FRED_FAILPOINTS=<name>[,<name>…]`; the process then kills itself
 * with SIGKILL the first time execution reaches one: the same as a `kill -9` or a power cut
 * at exactly that line, which a test cannot time from outside. Each daemon owns its list
 * of names and arms it from its composition root, logging a warning when any is armed.
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
