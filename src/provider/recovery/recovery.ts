import { retry } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { Lifecycle } from "../lifecycle/index.ts";
import { type RecoveryReport, runRecovery } from "./pass.ts";

/**
 * Recovery as providerd runs it: the pass (pass.ts) plus what the rest of the daemon
 * reads from it — whether a complete pass has run (readiness) and which backends answered
 * the latest one (the backend-health gauge). The startup pass waits for the event feed to
 * be live (events meanwhile wait in the lifecycle's queue), then repeats with backoff
 * until every unfenced backend has answered. Feed resyncs and the periodic pass call
 * `pass()` through the lifecycle.
 */
export interface RecoveryDeps {
  /** The lease workflows a pass hands leases to. */
  lifecycle: Lifecycle;
  /** Resolves once the chain event feed is live (rejects when `signal` aborts). */
  feedLive: (signal: AbortSignal) => Promise<void>;
  clock: Clock;
  logger: Logger;
}

/** Startup passes: 1 s after a pass that left a backend unanswered, doubling up to 30 s. */
const STARTUP_BACKOFF = { initialMs: 1_000, maxMs: 30_000 };

export class Recovery {
  readonly #d: RecoveryDeps;
  /** By backend: did its inventory answer the latest pass (fenced backends: false)? */
  readonly backendHealthy: Map<string, boolean>;
  #done = false;

  constructor(deps: RecoveryDeps) {
    this.#d = deps;
    const backends = deps.lifecycle.deps.config.backends;
    this.backendHealthy = new Map(backends.map((b) => [b.name, !b.fenced]));
  }

  /** True once a pass has run in which every unfenced backend answered. */
  get done(): boolean {
    return this.#done;
  }

  /** One recovery pass; records which backends answered it. */
  async pass(signal: AbortSignal): Promise<RecoveryReport> {
    const report = await runRecovery(this.#d.lifecycle, signal);
    for (const name of this.backendHealthy.keys())
      this.backendHealthy.set(name, report.answered.includes(name));
    if (report.complete) this.#done = true;
    return report;
  }

  /** The startup pass: once the feed is live, repeated until complete (or `signal` aborts). */
  async untilComplete(signal: AbortSignal): Promise<void> {
    const incomplete = new Error("a backend did not answer the recovery pass");
    await retry(
      async () => {
        // A resync or periodic pass may have completed meanwhile.
        if (this.#done) return;
        await this.#d.feedLive(signal);
        if (!(await this.pass(signal)).complete) throw incomplete;
      },
      {
        clock: this.#d.clock,
        backoff: STARTUP_BACKOFF,
        signal,
        retryable: () => true,
        onRetry: (err) => {
          if (err !== incomplete) this.#d.logger.warn({ err }, "startup recovery failed; retrying");
        },
      },
    );
  }
}
