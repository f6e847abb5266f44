/**
 * Minimum gas price as an exact decimal ("0.000025umfx"): required fee = ceil(gas × price),
 * the rule CheckTx applies (the SDK's DecCoin math, without float rounding).
 */

import { parseDecCoin } from "../core/coin.ts";
import { FredError } from "../core/errors.ts";

const SCALE = 10n ** 18n;

export interface GasPrice {
  denom: string;
  /** Price × 10^18. */
  scaled: bigint;
  text: string;
}

export function parseGasPrice(text: string): GasPrice {
  const price = parseDecCoin(text.trim());
  if (price === undefined) {
    throw new FredError(
      "ERR_DEVNET_CONFIG",
      `invalid gas price ${JSON.stringify(text)}; expected e.g. 0.000025umfx`,
    );
  }
  const scaled = price.whole * SCALE + BigInt(price.fraction.padEnd(18, "0"));
  return { denom: price.denom, scaled, text: text.trim() };
}

export function requiredFee(price: GasPrice, gasLimit: bigint): bigint {
  return (price.scaled * gasLimit + SCALE - 1n) / SCALE;
}
