import type { Clock } from "../clock.ts";

/**
 * A background pass that runs now and then again an interval after each run ends, so two
 * runs never overlap; a caller asking for a run while one is going joins it. Stopping
 * cancels the next run, aborts the current one's signal and waits for it to end. The
 * backend's sweeps (retention, image collection, usage sampling), providerd's usage
 * metrics poll and the HA inbox's looks share it.
 */
export class PeriodicPass {
  readonly #shutdown = new AbortController();
  #current: Promise<void> | undefined;
  #cancelTimer: (() => void) | undefined;
  #running = false;
  #again = false;

  constructor(
    private readonly options: {
      clock: Clock;
      /** Read after each run, so a changed policy takes effect at the next scheduling. */
      intervalMs: () => number;
      run: (signal: AbortSignal) => Promise<void>;
      /** A run that threw: logged by the owner; the next run tries again. */
      onError: (err: unknown) => void;
      /** After each run, before the next is scheduled to happen. */
      afterRun?: () => void;
    },
  ) {}

  /** Aborted once stop() is called. */
  get signal(): AbortSignal {
    return this.#shutdown.signal;
  }

  /** A first run now, then one every interval after the previous ends. */
  start(): void {
    this.#running = true;
    void this.run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#cancelTimer?.();
    this.#shutdown.abort(new Error("stopping"));
    await this.#current?.catch(() => {});
  }

  /**
   * A run now, or, while one is going, another right after it: for a caller that knows of
   * something the run under way may have looked for already (a notification).
   */
  runSoon(): void {
    if (this.#shutdown.signal.aborted) return;
    if (this.#current === undefined) void this.run();
    else this.#again = true;
  }

  /** One run; concurrent callers share it. */
  run(): Promise<void> {
    this.#current ??= this.options
      .run(this.#shutdown.signal)
      .catch((err: unknown) => this.options.onError(err))
      .finally(() => {
        this.#current = undefined;
        const again = this.#again;
        this.#again = false;
        if (this.#running) {
          this.#cancelTimer?.();
          this.#cancelTimer = this.options.clock.setTimer(
            again ? 0 : this.options.intervalMs(),
            () => void this.run(),
          );
        }
        this.options.afterRun?.();
      });
    return this.#current;
  }
}
