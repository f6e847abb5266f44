import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  adjustGas,
  checkGasConfig,
  feeFor,
  type GasConfig,
  outOfGasRetry,
  planGas,
} from "../../../src/chain/tx/build.ts";
import { classifyCode, classifyRpcError } from "../../../src/chain/tx/classify.ts";
import { isFredError } from "../../../src/core/errors.ts";

const DEFAULTS: GasConfig = {
  gasLimit: 1_500_000,
  gasAdjustment: 1.2,
  maxGasLimit: 0,
  gasPrice: 25,
  feeDenom: "umfx",
};

describe("gas and fees", () => {
  it("adjusts exactly (no float drift at 1.2) and floors", () => {
    assert.equal(adjustGas(100_000, 1.2), 120_000);
    assert.equal(adjustGas(75_001, 1.2), 90_001);
    assert.equal(adjustGas(3, 1.5), 4);
    assert.equal(adjustGas(1_000_000, 3), 3_000_000);
  });

  it("fee = max(1, ceil(gas × price / 1e6))", () => {
    assert.equal(feeFor(120_000, 25), 3n);
    assert.equal(feeFor(40_000, 25), 1n);
    assert.equal(feeFor(40_001, 25), 2n);
    assert.equal(feeFor(1, 25), 1n);
    assert.equal(feeFor(1_800_000, 25), 45n);
    assert.equal(feeFor(200_000, 0.025), 1n);
    assert.equal(feeFor(0, 0), 1n);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50_000_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        (gas, price) => {
          const fee = feeFor(gas, price);
          const exact = BigInt(gas) * BigInt(price);
          return (
            fee * 1_000_000n >= exact && (fee - 1n) * 1_000_000n < exact + (fee === 1n ? 1_000_000n : 0n)
          );
        },
      ),
    );
  });

  it("plans simulated gas, falls back to gas_limit × adjustment, refuses above max_gas_limit", () => {
    assert.deepEqual(planGas(150_000, DEFAULTS), { gas: 180_000, source: "simulated" });
    assert.deepEqual(planGas(undefined, DEFAULTS), { gas: 1_800_000, source: "fallback" });
    const capped = { ...DEFAULTS, maxGasLimit: 1_600_000 };
    assert.deepEqual(planGas(undefined, capped), { gas: 1_600_000, source: "fallback" });
    assert.throws(
      () => planGas(1_400_000, capped),
      (e) => isFredError(e, "ERR_TX_GAS_ABOVE_MAX") && !e.retryable,
    );
  });

  it("out-of-gas ladder grows ×1.5 and stops at max_gas_limit", () => {
    assert.equal(outOfGasRetry(100_000, DEFAULTS), 150_000);
    const capped = { ...DEFAULTS, maxGasLimit: 200_000 };
    assert.equal(outOfGasRetry(150_000, capped), 200_000);
    assert.equal(outOfGasRetry(200_000, capped), undefined);
  });

  it("config validation refuses bad values", () => {
    checkGasConfig(DEFAULTS);
    for (const bad of [
      { gasAdjustment: 0.9 },
      { gasAdjustment: 3.1 },
      { gasLimit: 0 },
      { maxGasLimit: 1000 },
      { gasPrice: -1 },
      { gasPrice: Number.NaN },
      { feeDenom: "x" },
    ]) {
      assert.throws(
        () => checkGasConfig({ ...DEFAULTS, ...bad }),
        (e) => isFredError(e, "ERR_CONFIG"),
        JSON.stringify(bad),
      );
    }
  });
});

describe("failure classification", () => {
  it("reads SDK codes and the expected sequence", () => {
    assert.deepEqual(
      classifyCode(32, "sdk", "account sequence mismatch, expected 7, got 5: incorrect account sequence"),
      {
        kind: "sequence",
        expected: 7,
      },
    );
    assert.deepEqual(classifyCode(11, "sdk", "out of gas in location: x"), { kind: "out_of_gas" });
    assert.deepEqual(classifyCode(13, "sdk", "insufficient fees"), { kind: "insufficient_fee" });
    assert.deepEqual(classifyCode(19, "sdk", "tx already in mempool"), { kind: "in_mempool" });
    assert.deepEqual(classifyCode(22, "billing", "lease not pending"), { kind: "lease", code: 22 });
    assert.deepEqual(classifyCode(22, "sdk", "key not found"), { kind: "terminal" });
    assert.deepEqual(classifyCode(6, "billing", "unauthorized"), { kind: "terminal" });
    assert.deepEqual(
      classifyRpcError(
        new Error('{"code":-32603,"message":"Internal error","data":"tx already exists in cache"}'),
      ),
      {
        kind: "in_mempool",
      },
    );
    assert.deepEqual(classifyRpcError(new Error("fetch failed")), { kind: "transient" });
  });
});
