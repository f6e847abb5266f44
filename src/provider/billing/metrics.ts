import { Counter, type Registry } from "prom-client";
import type { CoinAmount } from "../../chain/port.ts";

/**
 * The money loop's Prometheus counters (the names issue 17 lists). Amounts are counted
 * as numbers: a counter is a float, so past 2^53 base units it is approximate, which is
 * what a rate graph needs (the chain holds the exact figures).
 */
export type WithdrawOutcome = "complete" | "incomplete" | "skipped" | "failed";
export type CreditCheckOutcome = "ok" | "empty" | "error";

export interface BillingMetrics {
  withdrawCycle(outcome: WithdrawOutcome): void;
  settled(leases: number, amounts: readonly CoinAmount[]): void;
  creditCheck(outcome: CreditCheckOutcome): void;
  closures(leases: number): void;
  deferral(): void;
}

export function createBillingMetrics(registry: Registry | undefined): BillingMetrics {
  const registers = registry === undefined ? [] : [registry];
  const cycles = new Counter({
    name: "fred_withdraw_cycles_total",
    help: "Withdraw cycles by outcome (incomplete: stopped at max_withdraw_iterations)",
    labelNames: ["outcome"],
    registers,
  });
  const settled = new Counter({
    name: "fred_withdraw_leases_settled_total",
    help: "Leases settled by provider-wide withdrawals",
    registers,
  });
  const withdrawn = new Counter({
    name: "fred_withdrawn_amount_total",
    help: "Amount withdrawn to the payout address, in base units, by denom",
    labelNames: ["denom"],
    registers,
  });
  const checks = new Counter({
    name: "fred_credit_checks_total",
    help: "Tenant credit reads by outcome",
    labelNames: ["outcome"],
    registers,
  });
  const closed = new Counter({
    name: "fred_credit_closures_total",
    help: "Leases closed because their tenant's credit stayed empty for the grace period",
    registers,
  });
  const deferrals = new Counter({
    name: "fred_credit_deferrals_total",
    help: "Closures deferred because an empty balance had not yet lasted the grace period",
    registers,
  });
  return {
    withdrawCycle: (outcome) => cycles.inc({ outcome }),
    settled(leases, amounts) {
      if (leases > 0) settled.inc(leases);
      for (const c of amounts) {
        const n = Number(c.amount);
        if (n > 0) withdrawn.inc({ denom: c.denom }, n);
      }
    },
    creditCheck: (outcome) => checks.inc({ outcome }),
    closures: (leases) => {
      if (leases > 0) closed.inc(leases);
    },
    deferral: () => deferrals.inc(),
  };
}
