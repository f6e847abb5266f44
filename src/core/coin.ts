/**
 * The one reader of coin text ("10000000umfx", "0.000025umfx") and denoms, with the SDK's
 * denom rule: a letter, then 2 to 127 letters, digits or `/ : . _ -`. Parsers return
 * `undefined` on malformed text and leave the refusal to the caller, whose error code and
 * wording depend on where the text came from (a config key, a CLI flag, a chain message).
 */
const DENOM_SOURCE = "[a-zA-Z][a-zA-Z0-9/:._-]{2,127}";

/** A whole denom. */
export const DENOM_RE = new RegExp(`^${DENOM_SOURCE}$`);
/** An integer amount immediately followed by a denom (the SDK coin string, one coin). */
export const COIN_RE = new RegExp(`^([0-9]+)(${DENOM_SOURCE})$`);
/** A decimal amount (at most 18 fraction digits, the SDK's Dec precision) and a denom. */
const DEC_COIN_RE = new RegExp(`^([0-9]+)(?:\\.([0-9]{1,18}))?(${DENOM_SOURCE})$`);

export interface ParsedCoin {
  amount: bigint;
  denom: string;
}

export function isValidDenom(denom: string): boolean {
  return DENOM_RE.test(denom);
}

/** "10000000umfx" → { amount: 10000000n, denom: "umfx" }; zero amounts are the caller's call. */
export function parseCoin(text: string): ParsedCoin | undefined {
  const m = COIN_RE.exec(text);
  return m === null ? undefined : { amount: BigInt(m[1] as string), denom: m[2] as string };
}

export interface ParsedDecCoin {
  /** Integer part. */
  whole: bigint;
  /** Fraction digits as written (possibly ""), at most 18. */
  fraction: string;
  denom: string;
}

/** "0.000025umfx" → { whole: 0n, fraction: "000025", denom: "umfx" }. */
export function parseDecCoin(text: string): ParsedDecCoin | undefined {
  const m = DEC_COIN_RE.exec(text);
  if (m === null) return undefined;
  return { whole: BigInt(m[1] as string), fraction: m[2] ?? "", denom: m[3] as string };
}
