/** x/billing params: defaults, the bench profile's caps, and validation (code 1). */
import type { BillingParams } from "../../../chain/proto/index.ts";
import { addressProblem } from "../sku/validate.ts";
import { billingErrors } from "./errors.ts";
import { fqdnProblem } from "./validate.ts";

export const DEFAULT_PARAMS: BillingParams = {
  maxLeasesPerTenant: 100n,
  allowedList: [],
  maxItemsPerLease: 20n,
  minLeaseDuration: 3600n,
  maxPendingLeasesPerTenant: 10n,
  pendingTimeout: 1800n,
  reservedDomainSuffixes: [],
};

const BOUNDS = {
  maxLeasesPerTenant: [1n, 10_000n],
  maxItemsPerLease: [1n, 100n],
  minLeaseDuration: [1n, 2_592_000n],
  maxPendingLeasesPerTenant: [1n, 1000n],
  pendingTimeout: [60n, 86_400n],
} as const;

/** Every count limit at its cap: what `--profile bench` starts with. */
export const BENCH_PARAMS: BillingParams = {
  ...DEFAULT_PARAMS,
  maxLeasesPerTenant: BOUNDS.maxLeasesPerTenant[1],
  maxPendingLeasesPerTenant: BOUNDS.maxPendingLeasesPerTenant[1],
  maxItemsPerLease: BOUNDS.maxItemsPerLease[1],
};

const MAX_LIST = 100;

export function validateParams(p: BillingParams, prefix: string): void {
  for (const [field, [lo, hi]] of Object.entries(BOUNDS) as [
    keyof typeof BOUNDS,
    readonly [bigint, bigint],
  ][]) {
    const v = p[field];
    if (v < lo || v > hi)
      throw billingErrors.invalidParams.wrap(`${field} must be within ${lo}..${hi}, got ${v}`);
  }
  if (p.allowedList.length > MAX_LIST)
    throw billingErrors.invalidParams.wrap(`allowed_list above ${MAX_LIST}`);
  const seen = new Set<string>();
  for (const a of p.allowedList) {
    const problem = addressProblem(a, prefix);
    if (problem !== undefined) throw billingErrors.invalidParams.wrap(`allowed_list: ${problem}`);
    if (seen.has(a.toLowerCase())) throw billingErrors.invalidParams.wrap(`allowed_list: duplicate ${a}`);
    seen.add(a.toLowerCase());
  }
  if (p.reservedDomainSuffixes.length > MAX_LIST)
    throw billingErrors.invalidParams.wrap(`reserved_domain_suffixes above ${MAX_LIST}`);
  const suffixes = new Set<string>();
  for (const s of p.reservedDomainSuffixes) {
    if (!s.startsWith(".") || fqdnProblem(s.slice(1), true) !== undefined)
      throw billingErrors.invalidParams.wrap(`reserved domain suffix ${JSON.stringify(s)} is invalid`);
    if (suffixes.has(s.toLowerCase()))
      throw billingErrors.invalidParams.wrap(`duplicate reserved suffix ${s}`);
    suffixes.add(s.toLowerCase());
  }
}
