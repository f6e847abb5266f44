import type { ParsedManifest } from "../substrate.ts";
import type { RetentionRow } from "./store.ts";

/**
 * Retention policy: what the operator configured (the reference's Docker keys, validated
 * by each backend kind's config) and the two pure decisions it drives — which partition
 * a closing lease lands in, and whether (and at whose expense) it may be retained.
 */
export interface TenantBudget {
  /** 0 = no own limit (the global per-tenant caps still apply: a budget never raises a cap). */
  maxRetainedLeases: number;
  maxRetainedDiskMb: number;
  /** Distinct declared partitions kept at once; a further one collapses into the tenant bucket. */
  maxPartitions: number;
  perPartitionMaxLeases: number;
  perPartitionMaxDiskMb: number;
}

export type PartitionSource =
  | { kind: "none" }
  | { kind: "label"; key: string }
  | { kind: "env"; key: string };

export interface RetentionPolicy {
  retainOnClose: boolean;
  /** 0 = retained data never expires. */
  maxAgeMs: number;
  reapIntervalMs: number;
  orphanConfirmations: number;
  /** 0 = unlimited, for each of the three caps. */
  maxRetainedLeasesPerTenant: number;
  maxRetainedDiskMb: number;
  maxRetainedDiskMbPerTenant: number;
  partitionSource: PartitionSource;
  tenantBudgets: Readonly<Record<string, TenantBudget>>;
}

export const DEFAULT_RETENTION_MAX_AGE_MS = 2160 * 3_600_000;
export const DEFAULT_RETENTION_REAP_INTERVAL_MS = 3_600_000;
export const DEFAULT_ORPHAN_CONFIRMATIONS = 3;
const MAX_SOURCE_KEY = 128;

/**
 * `retention_partition_source`: "" | "manifest.label:<key>" | "manifest.env:<key>".
 * Returns the source or a problem text (config validation refuses startup with it).
 */
export function parsePartitionSource(raw: string): PartitionSource | { problem: string } {
  if (raw === "") return { kind: "none" };
  const m = /^manifest\.(label|env):(.+)$/.exec(raw);
  if (!m) return { problem: 'must be "", "manifest.label:<key>" or "manifest.env:<key>"' };
  const key = m[2] as string;
  if (key.length > MAX_SOURCE_KEY) return { problem: `the key is longer than ${MAX_SOURCE_KEY} characters` };
  if (key.trim() !== key || /\s/.test(key)) return { problem: "the key must not contain spaces" };
  if (m[1] === "label" && key.startsWith("fred.")) return { problem: "fred.* labels are reserved" };
  return { kind: m[1] === "label" ? "label" : "env", key };
}

const PARTITION = /^[A-Za-z0-9._-]{1,64}$/;

/** A declared value, trimmed; undefined when unusable (the lease lands in the tenant bucket ""). */
export function normalizePartition(raw: string): string | undefined {
  const v = raw.trim();
  return PARTITION.test(v) ? v : undefined;
}

export type CollapseReason = "no_input" | "divergent" | "invalid" | "over_limit";

/**
 * The partition of a closing lease. Never fails (nothing may fail a close): an unusable
 * declaration lands in "" with the reason. Services are read in name order; one lacking
 * the key is no divergence.
 */
export function extractPartition(
  source: PartitionSource,
  manifest: ParsedManifest | undefined,
): { partition: string; collapsed?: CollapseReason } {
  if (source.kind === "none") return { partition: "" };
  const services = manifest === undefined ? [] : Object.keys(manifest.services).sort();
  if (services.length === 0) return { partition: "", collapsed: "no_input" };
  let found: string | undefined;
  for (const name of services) {
    const svc = manifest?.services[name] as Record<string, unknown>;
    const bag = (source.kind === "label" ? svc.labels : svc.env) as Record<string, unknown> | undefined;
    const value = bag?.[source.key];
    if (typeof value !== "string" || value.trim() === "") continue;
    if (found !== undefined && found !== value.trim()) return { partition: "", collapsed: "divergent" };
    found = value.trim();
  }
  if (found === undefined) return { partition: "" };
  const ok = normalizePartition(found);
  return ok === undefined ? { partition: "", collapsed: "invalid" } : { partition: ok };
}

export type RetainDecision =
  | { retain: true; partition: string; evict: RetentionRow[]; collapsed?: CollapseReason }
  | { retain: false; why: string };

/** The smaller of two limits where 0 means none. */
const capOf = (a: number, b: number) => (a === 0 ? b : b === 0 ? a : Math.min(a, b));

/**
 * May a closing lease of `tenant` keep `mb` MiB? In order: the partition (a declared one
 * past the tenant's `max_partitions` collapses into ""), then the disk caps — global, per
 * tenant, per partition — which refuse (the close destroys instead; nobody else's data
 * is touched), then the count caps — per partition, then per tenant — which evict the
 * tenant's own oldest active rows. `held` are the rows whose data is restorable now.
 */
export function decideRetention(
  policy: RetentionPolicy,
  held: readonly RetentionRow[],
  c: { leaseUuid: string; tenant: string; partition: string; mb: number },
): RetainDecision {
  const budget = policy.tenantBudgets[c.tenant];
  const others = held.filter((r) => r.leaseUuid !== c.leaseUuid);
  const own = others.filter((r) => r.tenant === c.tenant);
  let partition = c.partition;
  let collapsed: CollapseReason | undefined;
  if (partition !== "" && budget !== undefined && budget.maxPartitions > 0) {
    const declared = new Set(own.map((r) => r.partition).filter((p) => p !== ""));
    if (!declared.has(partition) && declared.size >= budget.maxPartitions) {
      partition = "";
      collapsed = "over_limit";
    }
  }
  const sum = (rows: readonly RetentionRow[]) => rows.reduce((n, r) => n + r.retainedMb, 0);
  const inPartition = partition === "" ? [] : own.filter((r) => r.partition === partition);
  if (policy.maxRetainedDiskMb > 0 && sum(others) + c.mb > policy.maxRetainedDiskMb)
    return { retain: false, why: "max_retained_disk_mb" };
  const tenantDisk = capOf(policy.maxRetainedDiskMbPerTenant, budget?.maxRetainedDiskMb ?? 0);
  if (tenantDisk > 0 && sum(own) + c.mb > tenantDisk)
    return { retain: false, why: "max_retained_disk_mb_per_tenant" };
  const partitionDisk = budget?.perPartitionMaxDiskMb ?? 0;
  if (partition !== "" && partitionDisk > 0 && sum(inPartition) + c.mb > partitionDisk)
    return { retain: false, why: "per_partition_max_disk_mb" };

  const evict: RetentionRow[] = [];
  const oldestFirst = (rows: readonly RetentionRow[]) =>
    rows
      .filter((r) => r.status === "active")
      .sort(
        (a, b) => (a.retainedAtMs ?? 0) - (b.retainedAtMs ?? 0) || a.leaseUuid.localeCompare(b.leaseUuid),
      );
  const makeRoom = (rows: readonly RetentionRow[], cap: number): boolean => {
    if (cap <= 0) return true;
    const left = rows.filter((r) => !evict.includes(r));
    let excess = left.length + 1 - cap;
    for (const r of oldestFirst(left)) {
      if (excess <= 0) break;
      evict.push(r);
      excess--;
    }
    return excess <= 0;
  };
  if (partition !== "" && !makeRoom(inPartition, budget?.perPartitionMaxLeases ?? 0))
    return { retain: false, why: "per_partition_max_leases" };
  if (!makeRoom(own, capOf(policy.maxRetainedLeasesPerTenant, budget?.maxRetainedLeases ?? 0)))
    return { retain: false, why: "max_retained_leases_per_tenant" };
  return collapsed === undefined
    ? { retain: true, partition, evict }
    : { retain: true, partition, evict, collapsed };
}
