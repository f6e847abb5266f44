import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isValidDenom, parseCoin, parseDecCoin } from "../../src/core/coin.ts";

describe("coin text", () => {
  it("reads an integer amount and a denom", () => {
    assert.deepEqual(parseCoin("10000000umfx"), { amount: 10000000n, denom: "umfx" });
    assert.deepEqual(parseCoin("0ibc/ABC:1.x_y-z"), { amount: 0n, denom: "ibc/ABC:1.x_y-z" });
    assert.deepEqual(parseCoin("007upwr"), { amount: 7n, denom: "upwr" });
  });

  it("refuses what the SDK's coin rule refuses", () => {
    const long = `u${"a".repeat(128)}`;
    for (const bad of [
      "",
      "umfx",
      "10",
      "10 umfx",
      " 10umfx",
      "10umfx ",
      "-1umfx",
      "1.5umfx",
      "10um",

      long,
      "10umfx,5upwr",
    ]) {
      assert.equal(parseCoin(bad), undefined, JSON.stringify(bad));
    }
    assert.ok(parseCoin(`1u${"a".repeat(127)}`));
  });

  it("checks denoms on their own", () => {
    assert.ok(isValidDenom("umfx"));
    assert.ok(isValidDenom("factory/manifest1abc/upwr"));
    for (const bad of ["", "um", "1umfx", "u mfx", "umfx!"]) assert.equal(isValidDenom(bad), false, bad);
  });

  it("reads a decimal amount with at most 18 fraction digits", () => {
    assert.deepEqual(parseDecCoin("0.000025umfx"), { whole: 0n, fraction: "000025", denom: "umfx" });
    assert.deepEqual(parseDecCoin("25umfx"), { whole: 25n, fraction: "", denom: "umfx" });
    assert.equal(parseDecCoin(`0.${"1".repeat(19)}umfx`), undefined);
    for (const bad of ["0.umfx", ".5umfx", "1.5", "1,5umfx"]) assert.equal(parseDecCoin(bad), undefined, bad);
  });
});
