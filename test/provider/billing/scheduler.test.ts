import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BillingScheduler, type WithdrawReport } from "../../../src/provider/billing/index.ts";
import { manualClock, next, quiet } from "./harness.ts";

/** The scheduler alone, on a ManualClock, with jobs that only count their runs. */
const report: WithdrawReport = {
  outcome: "skipped",
  heights: [],
  settled: 0n,
  amounts: [],
  failedLeaseUuids: [],
};

function counting(withdrawMs: number, creditMs: number) {
  const clock = manualClock();
  const runs = { withdraw: 0, credit: 0, tenants: [] as string[], overlapping: 0, active: 0 };
  const job = async <T>(value: T): Promise<T> => {
    runs.active++;
    if (runs.active > 1) runs.overlapping++;
    await Promise.resolve();
    runs.active--;
    return value;
  };
  const s = new BillingScheduler({
    clock,
    logger: quiet,
    withdrawIntervalMs: withdrawMs,
    creditIntervalMs: creditMs,
    jobs: {
      withdraw: () => {
        runs.withdraw++;
        return job(report);
      },
      creditCheck: () => {
        runs.credit++;
        return job(undefined);
      },
      tenantCheck: (tenant) => {
        runs.tenants.push(tenant);
        return job(undefined);
      },
    },
  });
  return { clock, s, runs };
}

describe("billing scheduler", () => {
  it("a faster credit check never withdraws more often than withdraw_interval (cadence guard)", async () => {
    const { clock, s, runs } = counting(10_000, 1_000);
    await next(s, "credit", () => s.start());
    assert.deepEqual([runs.withdraw, runs.credit], [1, 1], "startup: one withdrawal, then the check");
    for (let i = 1; i <= 20; i++) await next(s, "credit", () => clock.advance(1_000));
    assert.equal(runs.credit, 21);
    assert.equal(runs.withdraw, 3, "withdrawals at 0 s, 10 s and 20 s only");
    assert.equal(runs.overlapping, 0);
    await s.stop();
  });

  it("credit_check_interval 0s runs the check right after each withdrawal", async () => {
    const { clock, s, runs } = counting(5_000, 0);
    await next(s, "credit", () => s.start());
    await next(s, "credit", () => clock.advance(5_000));
    assert.deepEqual([runs.withdraw, runs.credit], [2, 2]);
    await s.stop();
  });

  it("tenant checks run at once, once per queued tenant, without a withdrawal, never overlapping", async () => {
    const { s, runs } = counting(60_000, 30_000);
    await next(s, "credit", () => s.start());
    await s.idle();
    const seen: unknown[] = [];
    s.on("credit", (e) => seen.push(e));
    // "a" starts at once; "b", asked twice while "a" runs, is checked once after it.
    s.checkTenantNow("a");
    s.checkTenantNow("b");
    s.checkTenantNow("b");
    await s.idle();
    assert.deepEqual(runs.tenants, ["a", "b"]);
    assert.deepEqual(seen, [
      { tenant: "a", trigger: "event" },
      { tenant: "b", trigger: "event" },
    ]);
    assert.equal(runs.withdraw, 1);
    assert.equal(runs.overlapping, 0);
    await s.stop();
  });
});
