import { inspect } from "node:util";

/**
 * The one poller of the test suite. `until(probe, what)` calls `probe` every `intervalMs`
 * until it returns a value other than `undefined`, `null` or `false`, and resolves to that
 * value. Past the deadline it throws an error naming what was awaited and the last value the
 * probe returned, so a failing wait says what it saw. An error thrown by the probe is not
 * swallowed: it fails the wait at once (a broken probe is not "not yet").
 */
export interface UntilOptions {
  /** Deadline from the first call (default 30 s). */
  timeoutMs?: number;
  /** Pause between two calls (default 25 ms). */
  intervalMs?: number;
  /** Extra text for the failure message (e.g. a process's log tail), read only on failure. */
  context?: () => string;
}

type Pending = undefined | null | false;

export async function until<T>(
  probe: () => T | Pending | Promise<T | Pending>,
  what: string,
  options: number | UntilOptions = {},
): Promise<T> {
  const opts = typeof options === "number" ? { timeoutMs: options } : options;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const intervalMs = opts.intervalMs ?? 25;
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as T;
    const waited = Date.now() - started;
    if (waited >= timeoutMs) {
      const last = inspect(value, { depth: 4, breakLength: Number.POSITIVE_INFINITY });
      const extra = opts.context?.();
      throw new Error(
        `timed out after ${waited} ms waiting for ${what} (last value: ${last})` +
          (extra ? `\n${extra}` : ""),
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, timeoutMs - waited)));
  }
}
