/**
 * The faucet's settings, checked once: what one credit sends per denom, how long an address
 * waits before the same denom again, and how many credits the whole faucet grants a minute.
 */
import { parseCoin } from "../../core/coin.ts";
import { FredError } from "../../core/errors.ts";

/** 10 MFX and 10 PWR a credit: gas for many txs and credit for a few leases. */
export const DEFAULT_FAUCET_AMOUNT = "10000000umfx,10000000upwr";
/** One credit per address and denom a day, the wait the CosmJS faucet announces. */
export const DEFAULT_FAUCET_COOLDOWN_MS = 24 * 3600 * 1000;
/** Credits per minute over all addresses; bounds the faucet's drain and its share of each block. */
export const DEFAULT_FAUCET_CREDITS_PER_MINUTE = 600;
/** The port the CosmJS faucet listens on; `fred up` takes it when free. */
export const COSMJS_FAUCET_PORT = 8000;

export interface FaucetConfig {
  /** Amount one credit sends, by denom (the denoms the faucet offers). */
  readonly amounts: ReadonlyMap<string, bigint>;
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
    amounts: parseFaucetAmounts(opts.amounts ?? DEFAULT_FAUCET_AMOUNT),
    cooldownMs,
    creditsPerMinute,
  });
}
