/** The small shapes every dashboard answer shares: RFC 3339 times and coin amounts. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function isoOrNull(ms: number | undefined): string | null {
  return ms === undefined ? null : iso(ms);
}

/** Counter values by denom → `[{denom, amount}]` as integer strings of base units, sorted by denom. */
export function coins(byDenom: ReadonlyMap<string, number>): { denom: string; amount: string }[] {
  return [...byDenom]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([denom, amount]) => ({ denom, amount: BigInt(Math.max(0, Math.round(amount))).toString() }));
}
