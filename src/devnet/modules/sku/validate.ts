/**
 * Stateless x/sku rules: addresses, metadata hash, API URL and the price rule (a per-unit
 * price must split into a whole, non-zero per-second price).
 */
import { bech32 } from "@scure/base";
import type { Coin } from "../../../chain/proto/index.ts";
import { Unit } from "../../../chain/proto/index.ts";
import { isValidDenom } from "../../coins.ts";

export const MAX_META_HASH = 64;
export const MAX_API_URL = 2048;
export const MAX_SKU_NAME = 256;
export const SECONDS_PER_UNIT: Record<number, bigint> = {
  [Unit.UNIT_PER_HOUR]: 3600n,
  [Unit.UNIT_PER_DAY]: 86400n,
};

/** Why `address` is not a valid account address with `prefix`, or undefined when it is. */
export function addressProblem(address: string, prefix: string): string | undefined {
  if (address === "") return "empty address string is not allowed";
  try {
    const d = bech32.decode(address as `${string}1${string}`, 1023);
    if (d.prefix !== prefix) return `invalid Bech32 prefix; expected ${prefix}, got ${d.prefix}`;
    const n = bech32.fromWords(d.words).length;
    if (n !== 20 && n !== 32) return `address length ${n} is not 20 or 32`;
    if (address !== address.toLowerCase()) return "address must be lowercase";
    return undefined;
  } catch (err) {
    return `decoding bech32 failed: ${err instanceof Error ? err.message : String(err)}`;
  }
}

export function apiUrlProblem(url: string): string | undefined {
  if (url === "") return undefined;
  if (url.length > MAX_API_URL) return `api_url longer than ${MAX_API_URL} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "api_url is not a valid URL";
  }
  if (parsed.protocol !== "https:") return "api_url must use https";
  if (parsed.hostname === "") return "api_url must have a host";
  if (parsed.username !== "" || parsed.password !== "") return "api_url must not contain user info";
  return undefined;
}

/** Per-second price of a per-unit base price, or a reason it is not acceptable. */
export function perSecondPrice(
  unit: number,
  price: Coin | undefined,
): { perSecond: bigint } | { problem: string } {
  const seconds = SECONDS_PER_UNIT[unit];
  if (seconds === undefined) return { problem: "unit must be UNIT_PER_HOUR or UNIT_PER_DAY" };
  if (price === undefined) return { problem: "base_price is required" };
  if (!isValidDenom(price.denom)) return { problem: `invalid denom ${price.denom}` };
  if (!/^[0-9]+$/.test(price.amount)) return { problem: "invalid base_price amount" };
  const amount = BigInt(price.amount);
  if (amount <= 0n) return { problem: "base_price must be positive" };
  if (amount % seconds !== 0n) return { problem: `base_price must be divisible by ${seconds}` };
  return { perSecond: amount / seconds };
}

/** Removes control characters (event attribute hygiene). */
export function stripControl(text: string): string {
  return text.replace(/\p{Cc}/gu, "");
}
