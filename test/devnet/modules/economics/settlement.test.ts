import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatCoins } from "../../../../src/devnet/coins.ts";
import {
  insufficientDenom,
  leaseRate,
  reservationFor,
  type SettleInput,
  settle,
} from "../../../../src/devnet/economics/settlement.ts";

const S = 1_000_000_000n;
const T0 = 1_700_000_000n * S;
const upwr = (n: bigint) => new Map([["upwr", n]]);

// docker-small: 3 600 000 upwr/hour → 1000 upwr/s locked; quantity 2 → 2000 upwr/s.
const rate = leaseRate([{ quantity: 2n, lockedPrice: { denom: "upwr", amount: "1000" } }]);
const base: SettleInput = {
  rate,
  lastSettledNs: T0,
  toNs: T0,
  balance: upwr(10_000_000n),
  reserved: upwr(7_200_000n),
  tranche: upwr(7_200_000n),
};

describe("rates and reservations", () => {
  it("sums locked price × quantity per denom, across items", () => {
    const r = leaseRate([
      { quantity: 2n, lockedPrice: { denom: "upwr", amount: "1000" } },
      { quantity: 1n, lockedPrice: { denom: "umfx", amount: "7" } },
      { quantity: 3n, lockedPrice: { denom: "upwr", amount: "10" } },
    ]);
    assert.equal(formatCoins(r), "7umfx,2030upwr");
  });

  it("reserves rate × min_lease_duration: 2000/s × 3600 s = 7 200 000", () => {
    assert.equal(formatCoins(reservationFor(rate, 3600n)), "7200000upwr");
  });

  it("refuses a reservation the free balance cannot cover", () => {
    // 10 000 000 − 7 200 000 already reserved = 2 800 000 free < 7 200 000
    assert.equal(insufficientDenom(upwr(10_000_000n), upwr(7_200_000n), upwr(7_200_000n)), "upwr");
    assert.equal(insufficientDenom(upwr(14_400_000n), upwr(7_200_000n), upwr(7_200_000n)), undefined);
    // over-reserved account floors free at 0
    assert.equal(insufficientDenom(upwr(1n), upwr(5n), upwr(1n)), "upwr");
  });
});

describe("settle", () => {
  it("bills whole seconds only and carries the sub-second remainder", () => {
    const r = settle({ ...base, toNs: T0 + 10n * S + 700_000_000n });
    assert.equal(r.seconds, 10n);
    assert.equal(formatCoins(r.accrued), "20000upwr");
    assert.equal(formatCoins(r.transfer), "20000upwr");
    assert.equal(formatCoins(r.consumed), "20000upwr");
    assert.equal(r.carriedSettledNs, T0 + 10n * S);
    assert.equal(r.exhausted, false);
    assert.equal(r.shortfall, false);
    // the carried 0.7 s plus 0.4 s more makes one more whole second next time
    const next = settle({ ...base, lastSettledNs: r.carriedSettledNs, toNs: T0 + 11n * S + 100_000_000n });
    assert.equal(next.seconds, 1n);
  });

  it("never spends another lease's tranche and flags exhaustion", () => {
    // two leases of 7 200 000 each reserved; balance 15 000 000 → this lease may spend 7 800 000
    const r = settle({
      ...base,
      balance: upwr(15_000_000n),
      reserved: upwr(14_400_000n),
      toNs: T0 + 4000n * S,
    });
    assert.equal(formatCoins(r.accrued), "8000000upwr");
    assert.equal(formatCoins(r.spendable), "7800000upwr");
    assert.equal(formatCoins(r.transfer), "7800000upwr");
    assert.equal(formatCoins(r.consumed), "7200000upwr");
    assert.equal(r.exhausted, true);
    assert.equal(r.shortfall, true);
  });

  it("treats an exactly paid accrual as exhausted for withdraw but paid in full for close", () => {
    // spendable 2 000 000, 1000 s × 2000 = 2 000 000
    const r = settle({
      ...base,
      balance: upwr(2_000_000n),
      reserved: upwr(0n),
      tranche: upwr(0n),
      toNs: T0 + 1000n * S,
    });
    assert.equal(formatCoins(r.transfer), "2000000upwr");
    assert.equal(r.exhausted, true);
    assert.equal(r.shortfall, false);
  });

  it("with no elapsed time closes only when nothing is spendable", () => {
    const live = settle(base);
    assert.equal(live.seconds, 0n);
    assert.equal(live.exhausted, false);
    const empty = settle({
      ...base,
      balance: upwr(7_200_000n),
      reserved: upwr(14_400_000n),
      tranche: upwr(0n),
    });
    assert.equal(empty.exhausted, true);
    assert.equal(empty.shortfall, true);
    assert.equal(formatCoins(empty.transfer), "");
  });

  it("caps the billed interval at about 100 years and reports overflow", () => {
    const r = settle({ ...base, toNs: T0 + 4_000_000_000n * S });
    assert.equal(r.overflow, true);
    assert.equal(r.seconds, 3_153_600_000n);
    assert.equal(r.exhausted, true);
  });
});
