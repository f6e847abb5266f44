import { z } from "zod";
import { canonicalUuid } from "./requests.ts";

/**
 * `GET /usage/{uuid}`: what a lease's instances use, as the backend's sampler last saw it,
 * and the last hour of samples. The body is the tenant's `GET /v1/leases/{uuid}/usage`
 * answer without the lease's identity fields, so providerd relays exactly the fields read
 * here (unknown ones are dropped) once the whole body checks out; anything off this shape
 * fails the read as a whole.
 *
 * Units are in the names. Counters (`cpu_throttled_seconds`, `network_*_bytes`) count from
 * the instance's (container's) start, so they fall back to zero after a restart;
 * `cpu_cores` is the average over the last sample interval (null until two samples of the
 * same run exist). `null` means "not known here" (no memory limit, no volume, no sample).
 */

/** At most this many samples per instance: an hour at 5 s (the shortest interval a production backend allows). */
export const USAGE_HISTORY_MAX = 720;
/** The numbers `history` keeps per sample, each an array aligned with `history.timestamps`. */
export const USAGE_HISTORY_METRICS = [
  "cpu_cores",
  "memory_bytes",
  "network_rx_bytes",
  "network_tx_bytes",
  "disk_bytes",
] as const;
export type UsageHistoryMetric = (typeof USAGE_HISTORY_METRICS)[number];

const MAX_INSTANCES = 64 * 1000;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;

export interface InstanceUsageBody {
  service: string;
  instance: number;
  /** When this instance was last sampled (RFC 3339 UTC). */
  sampled_at: string;
  cpu_cores: number | null;
  cpu_limit_cores: number | null;
  cpu_throttled_seconds: number;
  memory_bytes: number;
  memory_limit_bytes: number | null;
  network_rx_bytes: number;
  network_tx_bytes: number;
  disk_bytes: number | null;
  disk_quota_bytes: number | null;
  restarts: number;
  started_at: string | null;
  uptime_seconds: number | null;
}

export type InstanceHistoryBody = { service: string; instance: number } & Record<
  UsageHistoryMetric,
  (number | null)[]
>;

export interface UsageBody {
  sample_interval_seconds: number;
  instances: InstanceUsageBody[];
  history: { timestamps: string[]; instances: InstanceHistoryBody[] };
}

const amount = z.number().finite().min(0);
const timestamp = z.string().regex(RFC3339);
const series = z.array(amount.nullable()).max(USAGE_HISTORY_MAX);

const instanceUsage = z.object({
  service: z.string().min(1).max(63),
  instance: z.int().min(0),
  sampled_at: timestamp,
  cpu_cores: amount.nullable(),
  cpu_limit_cores: amount.nullable(),
  cpu_throttled_seconds: amount,
  memory_bytes: amount,
  memory_limit_bytes: amount.nullable(),
  network_rx_bytes: amount,
  network_tx_bytes: amount,
  disk_bytes: amount.nullable(),
  disk_quota_bytes: amount.nullable(),
  restarts: z.int().min(0),
  started_at: timestamp.nullable(),
  uptime_seconds: amount.nullable(),
});

const instanceHistory = z.object({
  service: z.string().min(1).max(63),
  instance: z.int().min(0),
  cpu_cores: series,
  memory_bytes: series,
  network_rx_bytes: series,
  network_tx_bytes: series,
  disk_bytes: series,
});

/** The body's fields (the tenant's answer adds the lease's identity to them). */
export const usageShape = {
  sample_interval_seconds: z.number().finite().positive(),
  instances: z.array(instanceUsage).max(MAX_INSTANCES),
  history: z.object({
    timestamps: z.array(timestamp).max(USAGE_HISTORY_MAX),
    instances: z.array(instanceHistory).max(MAX_INSTANCES),
  }),
};

/** providerd's reader of `GET /usage/{uuid}`: every history array as long as `timestamps`. */
export const usageSchema = z
  .object(usageShape)
  .refine(
    (u) =>
      u.history.instances.every((h) =>
        USAGE_HISTORY_METRICS.every((m) => h[m].length === u.history.timestamps.length),
      ),
    { message: "history arrays must align with history.timestamps" },
  ) satisfies z.ZodType<UsageBody>;

/**
 * `GET /usage` (no lease): the current usage of every lease the backend samples, without
 * history, for providerd's Prometheus export (`lease_usage_metrics`). Keyset pages in lease
 * UUID order like `GET /provisions`: `?limit=` (default and ceiling 5000) and
 * `?continue=<the last lease UUID of the previous page>`; `continue` is in the answer only
 * when the page is full. A lease whose instances are not sampled yet is not listed.
 */
export interface LeaseUsageRow {
  lease_uuid: string;
  instances: InstanceUsageBody[];
}

export interface UsagePageBody {
  sample_interval_seconds: number;
  leases: LeaseUsageRow[];
  continue?: string;
}

/** providerd's reader of one `GET /usage` page. */
export const usagePageSchema = z
  .object({
    sample_interval_seconds: usageShape.sample_interval_seconds,
    leases: z.array(z.object({ lease_uuid: canonicalUuid(), instances: usageShape.instances })),
    continue: z
      .union([z.literal(""), canonicalUuid()])
      .optional()
      .transform((c) => (c === "" ? undefined : c)),
  })
  .transform((o) => ({
    items: o.leases,
    continueToken: o.continue,
    sampleIntervalSeconds: o.sample_interval_seconds,
  }));
