/**
 * The faucet's settings, checked once: what one credit sends per denom, how long an address
 * waits before the same denom again, and how many credits the whole faucet grants a minute.
 */
import { parseCoin } from "../../core/coin.ts";
import { FredError } from "../../core/errors.ts";

/** 10 MFX and 10 PWR a credit, by default: gas for many txs and credit for a few leases. */
const DEFAULT_CREDIT = 10_000_000n;
/** One credit per address and denom a day, the wait the CosmJS faucet announces. */
export const DEFAULT_FAUCET_COOLDOWN_MS = 24 * 3600 * 1000;
/** Credits per minute over all addresses; bounds the faucet's drain and its share of each block. */
export const DEFAULT_FAUCET_CREDITS_PER_MINUTE = 600;
/** The port the CosmJS faucet listens on; `fred up` takes it when free. */
export const COSMJS_FAUCET_PORT = 8000;

export interface FaucetConfig {
  /**
   * Amount one credit sends, by denom (the denoms the faucet offers); when absent, 10 MFX
   * and 10 PWR in the chain's own denoms (see `defaultFaucetAmounts`).
   */
  readonly amounts?: ReadonlyMap<string, bigint>;
  readonly cooldownMs: number;
  readonly creditsPerMinute: number;
}

/** "10000000umfx,10000000upwr" → amounts by denom; each denom once, each amount above zero. */
export function parseFaucetAmounts(text: string): Map<string, bigint> {
  const amounts = new Map<string, bigint>();
  for (const part of text.split(",").map((p) => p.trim())) {
    const c = parseCoin(part);
    if (c === undefined || c.amount === 0n) {
      throw new FredError(
        "ERR_DEVNET_CONFIG",
        `faucet amount ${JSON.stringify(part)} is not a coin above zero such as 10000000umfx`,
      );
    }
    if (amounts.has(c.denom))
      throw new FredError("ERR_DEVNET_CONFIG", `faucet amount names ${c.denom} twice`);
    amounts.set(c.denom, c.amount);
  }
  return amounts;
}

export function faucetConfig(opts: {
  amounts?: string;
  cooldownMs?: number;
  creditsPerMinute?: number;
}): FaucetConfig {
  const cooldownMs = opts.cooldownMs ?? DEFAULT_FAUCET_COOLDOWN_MS;
  const creditsPerMinute = opts.creditsPerMinute ?? DEFAULT_FAUCET_CREDITS_PER_MINUTE;
  if (!Number.isFinite(cooldownMs) || cooldownMs < 0)
    throw new FredError("ERR_DEVNET_CONFIG", "the faucet cooldown cannot be negative");
  if (!Number.isInteger(creditsPerMinute) || creditsPerMinute < 1)
    throw new FredError("ERR_DEVNET_CONFIG", "the faucet rate must be at least one credit a minute");
  return Object.freeze({
    ...(opts.amounts === undefined ? {} : { amounts: parseFaucetAmounts(opts.amounts) }),
    cooldownMs,
    creditsPerMinute,
  });
}

/** The default credit, in the denoms the chain runs with (the PWR denom may be a factory denom). */
export function defaultFaucetAmounts(feeDenom: string, pwrDenom: string): Map<string, bigint> {
  return new Map([
    [feeDenom, DEFAULT_CREDIT],
    [pwrDenom, DEFAULT_CREDIT],
  ]);
}
