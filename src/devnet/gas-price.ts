/**
 * Minimum gas price as an exact decimal ("0.000025umfx"): required fee = ceil(gas × price),
 * the rule CheckTx applies (the SDK's DecCoin math, without float rounding).
 */
import { FredError } from "../core/errors.ts";
import { isValidDenom } from "./coins.ts";

const SCALE = 10n ** 18n;

export interface GasPrice {
  denom: string;
  /** Price × 10^18. */
  scaled: bigint;
  text: string;
}

export function parseGasPrice(text: string): GasPrice {
  const m = /^([0-9]+)(?:\.([0-9]{1,18}))?([a-zA-Z][a-zA-Z0-9/:._-]{2,127})$/.exec(text.trim());
  if (!m || !isValidDenom(m[3] as string)) {
    throw new FredError(
      "ERR_DEVNET_CONFIG",
      `invalid gas price ${JSON.stringify(text)}; expected e.g. 0.000025umfx`,
    );
  }
  const frac = (m[2] ?? "").padEnd(18, "0");
  return { denom: m[3] as string, scaled: BigInt(m[1] as string) * SCALE + BigInt(frac), text: text.trim() };
}

export function requiredFee(price: GasPrice, gasLimit: bigint): bigint {
  return (price.scaled * gasLimit + SCALE - 1n) / SCALE;
}
