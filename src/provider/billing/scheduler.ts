import { EventEmitter } from "node:events";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { WithdrawReport } from "./withdrawals.ts";

/**
 * providerd's one billing scheduler: withdrawals every withdraw_interval, the credit
 * check every credit_check_interval (0: right after each withdrawal), and tenant checks
 * that the depletion watcher asks for at once. One timer, chained to the earliest due
 * time; a run never overlaps another (a trigger during a run is picked up right after it).
 *
 * The withdraw-cadence guard is structural: only the withdraw due time starts a paid
 * withdrawal, and it advances by withdraw_interval per cycle; however often the credit
 * check runs, or whatever asks for a tenant check, no code path here withdraws earlier.
 */
export interface BillingJobs {
  withdraw(signal: AbortSignal): Promise<WithdrawReport>;
  /** The full credit check; resolves the time (epoch ms) it wants to run again, if sooner. */
  creditCheck?(signal: AbortSignal): Promise<number | undefined>;
  /** One tenant's credit check, at once; resolves like `creditCheck`. */
  tenantCheck?(tenant: string, signal: AbortSignal): Promise<number | undefined>;
}

export interface BillingSchedulerOptions {
  clock: Clock;
  logger: Logger;
  withdrawIntervalMs: number;
  /** 0: coupled to the withdrawals (the check runs right after each cycle). */
  creditIntervalMs: number;
  jobs: BillingJobs;
}

/** Typed events, so tests wait for a run instead of sleeping. */
export interface BillingSchedulerEvents {
  withdraw: [WithdrawReport];
  credit: [{ tenant: string | undefined; trigger: "schedule" | "event" }];
}

export class BillingScheduler extends EventEmitter<BillingSchedulerEvents> {
  readonly #options: BillingSchedulerOptions;
  readonly #creditMs: number;
  readonly #abort = new AbortController();
  #nextWithdraw = 0;
  #nextCredit = 0;
  readonly #tenants = new Set<string>();
  #running: Promise<void> | undefined;
  #again = false;
  #cancelTimer: (() => void) | undefined;
  #stopped = false;
  /** Withdraw cycles started (the cadence guard's test reads it). */
  withdrawals = 0;

  constructor(opts: BillingSchedulerOptions) {
    super();
    this.#options = opts;
    this.#creditMs = opts.creditIntervalMs > 0 ? opts.creditIntervalMs : opts.withdrawIntervalMs;
  }

  /** Runs the startup cycle (a withdrawal, then the credit check) now, then on schedule. */
  start(): void {
    this.#kick();
  }

  /** Checks this tenant's credit as soon as the current run (if any) is over. */
  checkTenantNow(tenant: string): void {
    this.#tenants.add(tenant);
    this.#kick();
  }

  /** Runs the full credit check as soon as possible (after a feed resync). */
  checkAllSoon(): void {
    this.#nextCredit = 0;
    this.#kick();
  }

  /** Resolves once no run is in progress (tests; shutdown uses stop). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelTimer?.();
    this.#abort.abort();
    await this.#running;
  }

  #kick(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#cancelTimer?.();
    this.#running = this.#run()
      .catch((err) => {
        if (!this.#abort.signal.aborted) this.#options.logger.error({ err }, "billing run failed");
      })
      .finally(() => {
        this.#running = undefined;
        // An ask that came after the loop's last look but before this point runs now.
        if (this.#again) this.#kick();
        else this.#arm();
      });
  }

  #arm(): void {
    if (this.#stopped) return;
    const { clock } = this.#options;
    const due = Math.min(this.#nextWithdraw, this.#options.jobs.creditCheck ? this.#nextCredit : Infinity);
    this.#cancelTimer = clock.setTimer(Math.max(0, due - clock.now()), () => this.#kick());
  }

  async #run(): Promise<void> {
    const { clock, jobs, logger } = this.#options;
    const signal = this.#abort.signal;
    do {
      this.#again = false;
      const started = clock.now();
      if (started >= this.#nextWithdraw) {
        this.withdrawals++;
        const report = await jobs.withdraw(signal);
        this.#nextWithdraw = Math.max(started + this.#options.withdrawIntervalMs, clock.now());
        this.emit("withdraw", report);
      }
      if (jobs.creditCheck !== undefined && clock.now() >= this.#nextCredit) {
        this.#tenants.clear();
        const at = clock.now();
        const want = await jobs.creditCheck(signal).catch((err: unknown) => {
          if (signal.aborted) throw err;
          logger.warn({ err }, "credit check failed");
          return undefined;
        });
        this.#nextCredit = this.#earliest(at + this.#creditMs, want);
        this.emit("credit", { tenant: undefined, trigger: "schedule" });
      }
      for (const tenant of [...this.#tenants]) {
        this.#tenants.delete(tenant);
        if (jobs.tenantCheck === undefined || signal.aborted) break;
        const want = await jobs.tenantCheck(tenant, signal).catch((err: unknown) => {
          if (signal.aborted) throw err;
          logger.warn({ err, tenant }, "tenant credit check failed");
          return undefined;
        });
        this.#nextCredit = this.#earliest(this.#nextCredit, want);
        this.emit("credit", { tenant, trigger: "event" });
      }
    } while (this.#again && !this.#stopped);
  }

  /** The sooner of two due times, but never in the past (a past time would spin). */
  #earliest(due: number, want: number | undefined): number {
    const t = want === undefined ? due : Math.min(due, want);
    return Math.max(t, this.#options.clock.now() + 1);
  }
}
