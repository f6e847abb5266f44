/**
 * Keeps the sub-signer lanes converged: one pass at start, then one every
 * `sub_signer_fund_check_interval`, and one as soon as a lane is restarted (its grant is
 * gone or it cannot pay fees). Passes never overlap: a trigger during a pass runs one more
 * right after it. A pass that left a lane unsettled (a read or a fix tx failed) is retried
 * with backoff instead of waiting a whole interval; what a failed read proves is nothing,
 * so it changes no lane (see signer-lanes.ts). Timers come from the injected Clock.
 */
import { EventEmitter } from "node:events";
import type { LanePassReport } from "../../chain/cosmos/signer-lanes.ts";
import { Backoff, type BackoffPolicy } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";

export type PassOutcome = "converged" | "unsettled" | "failed";

export interface SupervisorOptions {
  converge: (signal: AbortSignal) => Promise<LanePassReport>;
  clock: Clock;
  intervalMs: number;
  /** Delays before re-running a pass that left work undone (default 1 s doubling to 60 s). */
  retry?: BackoffPolicy;
  logger?: Logger;
}

type SupervisorState =
  | { kind: "idle" }
  | { kind: "waiting"; cancel: () => void }
  | { kind: "running"; again: boolean }
  | { kind: "stopped" };

export class SignerSupervisor extends EventEmitter<{ pass: [PassOutcome, LanePassReport | undefined] }> {
  readonly #options: SupervisorOptions;
  readonly #backoff: Backoff;
  readonly #abort = new AbortController();
  #state: SupervisorState = { kind: "idle" };
  #current: Promise<void> = Promise.resolve();
  readonly passes = new Map<PassOutcome, number>();

  constructor(opts: SupervisorOptions) {
    super();
    this.#options = opts;
    this.#backoff = new Backoff(opts.retry ?? { initialMs: 1_000, maxMs: 60_000 });
  }

  /** Runs the first pass (resolves when it is done, whatever its outcome) and keeps going. */
  start(): Promise<void> {
    this.trigger();
    return this.#current;
  }

  /** A pass now (or right after the running one). */
  trigger(): void {
    const s = this.#state;
    if (s.kind === "stopped") return;
    if (s.kind === "running") {
      s.again = true;
      return;
    }
    if (s.kind === "waiting") s.cancel();
    this.#run();
  }

  #run(): void {
    const state: SupervisorState = { kind: "running", again: false };
    this.#state = state;
    this.#current = this.#pass().then((outcome) => {
      if (this.#state.kind === "stopped") return;
      if (state.again) return this.#run();
      const delay =
        outcome === "converged"
          ? this.#options.intervalMs
          : Math.min(this.#backoff.next(), this.#options.intervalMs);
      if (outcome === "converged") this.#backoff.reset();
      this.#state = { kind: "waiting", cancel: this.#options.clock.setTimer(delay, () => this.#run()) };
    });
  }

  async #pass(): Promise<PassOutcome> {
    let outcome: PassOutcome;
    let report: LanePassReport | undefined;
    try {
      report = await this.#options.converge(this.#abort.signal);
      outcome = report.unsettled === 0 && report.errors.length === 0 ? "converged" : "unsettled";
      const fields = {
        grants_sent: report.grantsSent,
        topped_up: report.toppedUp,
        read_errors: report.readErrors,
        tx_errors: report.txErrors,
        unsettled: report.unsettled,
      };
      if (outcome === "converged") this.#options.logger?.debug(fields, "sub-signer lanes converged");
      else
        this.#options.logger?.warn({ ...fields, errors: report.errors }, "sub-signer pass left work undone");
    } catch (err) {
      outcome = "failed";
      this.#options.logger?.warn({ err: (err as Error).message }, "sub-signer pass failed");
    }
    this.passes.set(outcome, (this.passes.get(outcome) ?? 0) + 1);
    this.emit("pass", outcome, report);
    return outcome;
  }

  /** Stops scheduling and waits for a pass in flight (its txs are aborted). */
  async stop(): Promise<void> {
    const s = this.#state;
    if (s.kind === "waiting") s.cancel();
    this.#state = { kind: "stopped" };
    this.#abort.abort();
    await this.#current;
  }
}
