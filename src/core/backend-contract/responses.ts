import { z } from "zod";
import { isUuidV4 } from "../uuid.ts";
import { canonicalUuid, type LeaseRead, typedOnly, type WireLeaseItem } from "./requests.ts";
import { usagePageSchema, usageSchema } from "./usage.ts";

/**
 * Response bodies a backend sends and providerd reads. Input types are what the backend
 * builds; the schemas are providerd's readers: a body off the contract's shape fails as a
 * whole (never half-used), unknown extra fields are dropped, and a few fields are read
 * leniently where the reference tolerates old backends (see each one).
 */

const MiB = 1024 * 1024;

/** What providerd reads of each response at most (a longer body is refused, not truncated). */
export const RESPONSE_CAPS = {
  provision: 1 * MiB,
  mutation: 1 * MiB,
  info: 1 * MiB,
  provisionsPage: 8 * MiB,
  retentionsPage: 1 * MiB,
  logs: 16 * MiB,
  usage: 16 * MiB,
  usagePage: 16 * MiB,
  releases: 8 * MiB,
  stats: 1 * MiB,
  health: 64 * 1024,
} as const;

/** A JSON object (not null, not an array), kept as it came. */
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A value that passes `check`, kept as it came (same object, same key order). */
const relayed = <T>(check: z.ZodType) => z.custom<T>((v) => check.safeParse(v).success);

/** `lifecycle_generation` as a backend persists it. */
export type GenerationWire = { kind: "typed"; id: string } | { kind: "legacy" } | { kind: "unknown" };
/** What providerd makes of it: an off-contract generation is unusable, not an error. */
export type Generation = { kind: "unknown" | "legacy" | "typed" | "unusable"; id?: string };

function readGeneration(g: unknown): Generation {
  if (g === undefined || g === null || typeof g !== "object") return { kind: "unknown" };
  const { kind, id } = g as Record<string, unknown>;
  if (kind === "typed") return isUuidV4(id) ? { kind: "typed", id } : { kind: "unusable" };
  if (kind === "legacy") return { kind: "legacy" };
  if (kind === "unknown") return { kind: "unknown" };
  return { kind: "unusable" };
}

/**
 * The consecutive-failure budget a backend reports with a lease: the recorded count of
 * consecutive failures of the tenant's own workload, and `exhausted` once the provider
 * should close the lease for repeated failure (else `retry`).
 */
export interface TerminalBudgetBody {
  verdict: "retry" | "exhausted";
  consecutive_failures: number;
}

export const terminalBudgetSchema = z.object({
  verdict: z.enum(["retry", "exhausted"]),
  consecutive_failures: z.int().min(0),
});

/** A record's `terminal_budget` when it is on the contract's shape; an off-shape one counts as none. */
export function readTerminalBudget(record: Record<string, unknown>): TerminalBudgetBody | undefined {
  const parsed = terminalBudgetSchema.safeParse(record.terminal_budget);
  return parsed.success ? parsed.data : undefined;
}

/** GET /provisions/{uuid} and each inventory row, as the backend builds it. */
export interface ProvisionInfoBody {
  lease_uuid: string;
  provider_uuid?: string;
  tenant?: string;
  status: string;
  created_at?: string;
  fail_count?: number;
  quantity?: number;
  items?: WireLeaseItem[];
  lifecycle_generation?: GenerationWire;
  image?: string;
  sku?: string;
  reason?: string;
  message?: string;
  terminal_budget?: TerminalBudgetBody;
}

/** GET /provisions/{uuid}: relayed as sent once `lease_uuid` and `status` check out. */
export const provisionInfoSchema = relayed<ProvisionInfoBody & Record<string, unknown>>(
  z.object({ lease_uuid: canonicalUuid(), status: z.string() }),
);

/** One inventory row as providerd uses it. */
export interface ProvisionEntry {
  leaseUuid: string;
  status: string;
  /** typed: the lifecycle generation id the backend persisted; unknown when omitted. */
  lifecycleGeneration: Generation;
  createdAt?: string;
  failCount?: number;
  /** The backend's consecutive-failure budget, when it reports one on the contract's shape. */
  terminalBudget?: TerminalBudgetBody;
  /**
   * The custom domains the row's `items` carry, i.e. what the backend applied (items without
   * one left out); undefined when the row has no `items` on the contract's shape.
   */
  customDomains?: { service: string; domain: string }[];
  /** What the row says the workload is (GET /workloads shows it); off-shape fields are left out. */
  workload: WorkloadFacts;
}

/** A row's informational workload fields: its items, top-level SKU, image and quantity. */
export interface WorkloadFacts {
  items?: { serviceName?: string; sku: string; quantity: number }[];
  sku?: string;
  image?: string;
  quantity?: number;
  /** Per-service image references, when the backend reports them (`service_images`). */
  serviceImages?: Record<string, string>;
}

const workloadItems = z
  .array(
    z.object({
      service_name: z.string().optional(),
      sku: z.string(),
      quantity: z.number().int().min(0),
    }),
  )
  .optional()
  .catch(undefined);

/** Only the fields the sweep compares; an off-shape list counts as not reported. */
const reportedItems = z
  .array(z.object({ service_name: z.string().optional(), custom_domain: z.string().optional() }))
  .optional()
  .catch(undefined);

const provisionRow = z
  .object({
    lease_uuid: canonicalUuid(),
    status: z.string().min(1),
    lifecycle_generation: typedOnly<GenerationWire>(),
    // Informational: a value of another type is ignored rather than failing the page.
    created_at: z.string().optional().catch(undefined),
    fail_count: z.number().optional().catch(undefined),
    terminal_budget: terminalBudgetSchema.optional().catch(undefined),
    // Read twice in the transform (custom domains, workload facts): neither hides the other.
    items: z.unknown().optional(),
    sku: z.string().optional().catch(undefined),
    image: z.string().optional().catch(undefined),
    quantity: z.number().int().min(0).optional().catch(undefined),
    service_images: z.record(z.string(), z.string()).optional().catch(undefined),
  })
  .transform((p): ProvisionEntry => {
    const entry: ProvisionEntry = {
      leaseUuid: p.lease_uuid,
      status: p.status,
      lifecycleGeneration: readGeneration(p.lifecycle_generation),
      workload: workloadFacts(p),
    };
    if (p.created_at !== undefined) entry.createdAt = p.created_at;
    if (p.fail_count !== undefined) entry.failCount = p.fail_count;
    if (p.terminal_budget !== undefined) entry.terminalBudget = p.terminal_budget;
    const reported = reportedItems.parse(p.items);
    if (reported !== undefined)
      entry.customDomains = reported
        .filter((i) => i.custom_domain !== undefined && i.custom_domain !== "")
        .map((i) => ({ service: i.service_name ?? "", domain: i.custom_domain as string }));
    return entry;
  });

function workloadFacts(p: {
  items?: unknown;
  sku?: string | undefined;
  image?: string | undefined;
  quantity?: number | undefined;
  service_images?: Record<string, string> | undefined;
}): WorkloadFacts {
  const out: WorkloadFacts = {};
  const items = workloadItems.parse(p.items);
  if (items !== undefined)
    out.items = items.map((i) => ({
      ...(i.service_name === undefined || i.service_name === "" ? {} : { serviceName: i.service_name }),
      sku: i.sku,
      quantity: i.quantity,
    }));
  if (p.sku !== undefined) out.sku = p.sku;
  if (p.image !== undefined && p.image !== "") out.image = p.image;
  if (p.quantity !== undefined) out.quantity = p.quantity;
  if (p.service_images !== undefined) out.serviceImages = p.service_images;
  return out;
}

/** A page's cursor: the last lease UUID of a full page; absent or "" on the last page. */
const cursor = z
  .union([z.literal(""), canonicalUuid()])
  .optional()
  .transform((c) => (c === "" ? undefined : c));

export interface Page<T> {
  items: T[];
  continueToken: string | undefined;
}

/** GET /provisions (a page, or the rows of `lease_uuid` filters). */
export const provisionsPageSchema = z
  .object({ provisions: z.array(provisionRow), continue: cursor })
  .transform((o): Page<ProvisionEntry> => ({ items: o.provisions, continueToken: o.continue }));

export type ProvisionsPageBody = z.input<typeof provisionsPageSchema>;

/** GET /retentions: the list is never null. */
export const retentionsPageSchema = z
  .object({ retentions: z.array(z.object({ lease_uuid: canonicalUuid() })), continue: cursor })
  .transform(
    (o): Page<string> => ({
      items: o.retentions.map((r) => r.lease_uuid),
      continueToken: o.continue,
    }),
  );

export type RetentionsPageBody = z.input<typeof retentionsPageSchema>;

export interface BackendStats {
  totalCpuCores: number;
  allocatedCpuCores: number;
  /** Memory and disk in MB, when the backend reports them (the operator's dashboard shows them). */
  memoryMb?: { allocated: number; total: number };
  diskMb?: { allocated: number; total: number };
  /** The backend's version, when it says (ours do: "0.1.0 (commit …)"; the reference's do not). */
  version?: string;
  diskWithheld: boolean;
  /**
   * Registry domains the backend accepts images from: a list is exactly those (empty:
   * none), null is "any registry" (no allowlist). Absent when the backend does not say
   * (the reference's backends), so nothing may be concluded from it.
   */
  allowedRegistries?: readonly string[] | null;
}

/** GET /stats (available_* and counts too; providerd reads only these). */
export const statsSchema = z
  .object({
    total_cpu_cores: z.number().min(0),
    allocated_cpu_cores: z.number().min(0),
    total_memory_mb: z.number().min(0).optional(),
    allocated_memory_mb: z.number().min(0).optional(),
    total_disk_mb: z.number().min(0).optional(),
    allocated_disk_mb: z.number().min(0).optional(),
    disk_withheld: z.boolean().optional(),
    version: z.string().min(1).max(200).optional(),
    allowed_registries: z.array(z.string().min(1).max(255)).max(1_000).nullable().optional(),
  })
  .transform((o): BackendStats => {
    const stats: BackendStats = {
      totalCpuCores: o.total_cpu_cores,
      allocatedCpuCores: o.allocated_cpu_cores,
      diskWithheld: o.disk_withheld === true,
    };
    if (o.total_memory_mb !== undefined && o.allocated_memory_mb !== undefined)
      stats.memoryMb = { allocated: o.allocated_memory_mb, total: o.total_memory_mb };
    if (o.total_disk_mb !== undefined && o.allocated_disk_mb !== undefined)
      stats.diskMb = { allocated: o.allocated_disk_mb, total: o.total_disk_mb };
    if (o.version !== undefined) stats.version = o.version;
    if (o.allowed_registries !== undefined) stats.allowedRegistries = o.allowed_registries;
    return stats;
  });

export type StatsBody = z.input<typeof statsSchema>;

const plainObject = z.custom<Record<string, unknown>>(isPlainObject);

/** GET /info/{uuid}: connection details (only these fields are relayed). */
export const leaseInfoSchema = z.object({
  host: z.string().optional(),
  fqdn: z.string().optional(),
  protocol: z.string().optional(),
  ports: plainObject.optional(),
  services: plainObject.optional(),
  instances: z.array(z.unknown()).optional(),
  metadata: z
    .custom<Record<string, string>>(
      (v) => isPlainObject(v) && Object.values(v).every((s) => typeof s === "string"),
    )
    .optional(),
});
export type LeaseInfo = z.output<typeof leaseInfoSchema>;

/** GET /logs/{uuid}?tail=N: text per "<service>/<index>". */
export const logsSchema = z.custom<Record<string, string>>(
  (v) => isPlainObject(v) && Object.values(v).every((s) => typeof s === "string"),
);

export interface ReleaseInfoBody {
  version: number;
  image: string;
  status: string;
  created_at: string;
  /** Standard base64 of the release's manifest (registry passwords masked). */
  manifest?: string;
  /**
   * The immutable image reference a single-service release runs (`name@sha256:…`, or the
   * image ID `sha256:…` for an image no registry served); absent until pinned and for stacks.
   */
  image_digest?: string;
  /** Service name → pinned image reference, once the release's images are resolved. */
  image_digests?: Record<string, string>;
  reason?: string;
  message?: string;
}

/** GET /releases/{uuid}: relayed object by object. */
export const releasesSchema = z.array(z.custom<ReleaseInfoBody & Record<string, unknown>>(isPlainObject));

/** 202 to POST /provision. */
export type ProvisionAcceptedBody = { provision_id: string };
/** 200 to POST /deprovision (idempotent). */
export type DeprovisionedBody = { status: "ok" };

/** GET /health: healthy only as 200 with exactly this status. */
export const healthySchema = z.object({ status: z.literal("healthy") });
export type HealthBody = { status: "healthy" } | { status: "unhealthy"; error: string };
/** The fixed 503 answers (the unauthenticated route never carries engine or SQLite text). */
export const UNHEALTHY = {
  journal: { status: "unhealthy", error: "journal unavailable" },
  substrate: { status: "unhealthy", error: "substrate unavailable" },
} as const satisfies Record<string, HealthBody>;

/** Per-lease reads: providerd's reader of each and how much of the answer it reads. */
export const LEASE_READS = {
  info: { schema: leaseInfoSchema, maxBytes: RESPONSE_CAPS.info, what: "info" },
  provisions: { schema: provisionInfoSchema, maxBytes: RESPONSE_CAPS.provision, what: "provision" },
  releases: { schema: releasesSchema, maxBytes: RESPONSE_CAPS.releases, what: "releases" },
  logs: { schema: logsSchema, maxBytes: RESPONSE_CAPS.logs, what: "logs" },
  usage: { schema: usageSchema, maxBytes: RESPONSE_CAPS.usage, what: "usage" },
} as const satisfies Record<LeaseRead, { schema: z.ZodType; maxBytes: number; what: string }>;

/** The lists providerd walks page by page (the two inventories, and current usage). */
export const INVENTORIES = {
  provisions: { schema: provisionsPageSchema, maxBytes: RESPONSE_CAPS.provisionsPage },
  retentions: { schema: retentionsPageSchema, maxBytes: RESPONSE_CAPS.retentionsPage },
  usage: { schema: usagePageSchema, maxBytes: RESPONSE_CAPS.usagePage },
} as const;
