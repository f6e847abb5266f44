import { FredError } from "../../core/errors.ts";
import { parseStrictJson } from "../../core/strict-json.ts";
import { isCanonicalUuid, isUuidV4 } from "../../core/uuid.ts";

/**
 * Strict decoders for backend response bodies. A body that does not have the contract's
 * shape is ERR_BACKEND_MALFORMED: never guessed at, never half-used. Unknown extra
 * fields are dropped, as the reference does.
 */
export interface ProvisionEntry {
  leaseUuid: string;
  status: string;
  /** typed: the lifecycle generation id the backend persisted; unknown when omitted. */
  lifecycleGeneration: { kind: "unknown" | "legacy" | "typed" | "unusable"; id?: string };
  createdAt?: string;
  failCount?: number;
}

export interface Page<T> {
  items: T[];
  continueToken: string | undefined;
}

export interface BackendStats {
  totalCpuCores: number;
  allocatedCpuCores: number;
  diskWithheld: boolean;
}

export interface LeaseInfo {
  host?: string;
  fqdn?: string;
  protocol?: string;
  ports?: Record<string, unknown>;
  instances?: unknown[];
  services?: Record<string, unknown>;
  metadata?: Record<string, string>;
}

function malformed(backend: string, what: string): FredError {
  return new FredError("ERR_BACKEND_MALFORMED", `backend ${backend}: malformed ${what} response`, {
    retryable: true,
  });
}

function object(body: Buffer, max: number, backend: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseStrictJson(body, max);
  } catch {
    throw malformed(backend, what);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw malformed(backend, what);
  return v as Record<string, unknown>;
}

function continueOf(o: Record<string, unknown>, backend: string, what: string): string | undefined {
  const c = o.continue;
  if (c === undefined || c === "") return undefined;
  if (!isCanonicalUuid(c)) throw malformed(backend, what);
  return c;
}

export function decodeProvisionsPage(body: Buffer, max: number, backend: string): Page<ProvisionEntry> {
  const o = object(body, max, backend, "provisions");
  if (!Array.isArray(o.provisions)) throw malformed(backend, "provisions");
  const items = o.provisions.map((raw): ProvisionEntry => {
    if (typeof raw !== "object" || raw === null) throw malformed(backend, "provisions");
    const p = raw as Record<string, unknown>;
    if (!isCanonicalUuid(p.lease_uuid) || typeof p.status !== "string" || p.status === "") {
      throw malformed(backend, "provisions");
    }
    const entry: ProvisionEntry = {
      leaseUuid: p.lease_uuid,
      status: p.status,
      lifecycleGeneration: generation(p),
    };
    if (typeof p.created_at === "string") entry.createdAt = p.created_at;
    if (typeof p.fail_count === "number") entry.failCount = p.fail_count;
    return entry;
  });
  return { items, continueToken: continueOf(o, backend, "provisions") };
}

function generation(p: Record<string, unknown>): ProvisionEntry["lifecycleGeneration"] {
  const g = p.lifecycle_generation as Record<string, unknown> | undefined;
  if (g === undefined || g === null || typeof g !== "object") return { kind: "unknown" };
  if (g.kind === "typed") return isUuidV4(g.id) ? { kind: "typed", id: g.id } : { kind: "unusable" };
  if (g.kind === "legacy") return { kind: "legacy" };
  if (g.kind === "unknown") return { kind: "unknown" };
  return { kind: "unusable" };
}

export function decodeRetentionsPage(body: Buffer, max: number, backend: string): Page<string> {
  const o = object(body, max, backend, "retentions");
  // The contract says the list is never null.
  if (!Array.isArray(o.retentions)) throw malformed(backend, "retentions");
  const items = o.retentions.map((raw) => {
    const lease = (raw as Record<string, unknown> | null)?.lease_uuid;
    if (!isCanonicalUuid(lease)) throw malformed(backend, "retentions");
    return lease;
  });
  return { items, continueToken: continueOf(o, backend, "retentions") };
}

export function decodeStats(body: Buffer, max: number, backend: string): BackendStats {
  const o = object(body, max, backend, "stats");
  const total = o.total_cpu_cores;
  const allocated = o.allocated_cpu_cores;
  if (typeof total !== "number" || typeof allocated !== "number" || total < 0 || allocated < 0) {
    throw malformed(backend, "stats");
  }
  if (o.disk_withheld !== undefined && typeof o.disk_withheld !== "boolean")
    throw malformed(backend, "stats");
  return { totalCpuCores: total, allocatedCpuCores: allocated, diskWithheld: o.disk_withheld === true };
}

export function decodeInfo(body: Buffer, max: number, backend: string): LeaseInfo {
  const o = object(body, max, backend, "info");
  const out: LeaseInfo = {};
  for (const key of ["host", "fqdn", "protocol"] as const) {
    if (o[key] === undefined) continue;
    if (typeof o[key] !== "string") throw malformed(backend, "info");
    out[key] = o[key];
  }
  const isMap = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
  if (o.ports !== undefined) {
    if (!isMap(o.ports)) throw malformed(backend, "info");
    out.ports = o.ports as Record<string, unknown>;
  }
  if (o.services !== undefined) {
    if (!isMap(o.services)) throw malformed(backend, "info");
    out.services = o.services as Record<string, unknown>;
  }
  if (o.instances !== undefined) {
    if (!Array.isArray(o.instances)) throw malformed(backend, "info");
    out.instances = o.instances;
  }
  if (o.metadata !== undefined) {
    if (!isMap(o.metadata) || Object.values(o.metadata as object).some((v) => typeof v !== "string")) {
      throw malformed(backend, "info");
    }
    out.metadata = o.metadata as Record<string, string>;
  }
  return out;
}

export function decodeProvisionAccepted(body: unknown): string | undefined {
  const id = (body as Record<string, unknown> | undefined)?.provision_id;
  return typeof id === "string" ? id : undefined;
}

export function decodeProvisionInfo(body: Buffer, max: number, backend: string): Record<string, unknown> {
  const o = object(body, max, backend, "provision");
  if (!isCanonicalUuid(o.lease_uuid) || typeof o.status !== "string") throw malformed(backend, "provision");
  return o;
}

export function decodeLogs(body: Buffer, max: number, backend: string): Record<string, string> {
  const o = object(body, max, backend, "logs");
  if (Object.values(o).some((v) => typeof v !== "string")) throw malformed(backend, "logs");
  return o as Record<string, string>;
}

export function decodeReleases(body: Buffer, max: number, backend: string): Record<string, unknown>[] {
  let v: unknown;
  try {
    v = parseStrictJson(body, max);
  } catch {
    throw malformed(backend, "releases");
  }
  if (!Array.isArray(v) || v.some((r) => typeof r !== "object" || r === null || Array.isArray(r))) {
    throw malformed(backend, "releases");
  }
  return v as Record<string, unknown>[];
}
