import { isCanonicalUuid, isUuidV4 } from "../../core/uuid.ts";

/**
 * Pure validation of an inbound callback: the capability in the URL query (exactly one
 * of operation_id / lifecycle_id, canonical lowercase v4, present once) and the JSON
 * body's field rules. Returns a typed callback or the one problem that refuses it (400).
 * The body's own operation_id / lifecycle_id are untrusted and ignored.
 */
export interface ParsedCallback {
  capability: { kind: "operation" | "lifecycle"; id: string };
  leaseUuid: string;
  status: "success" | "failed" | "deprovisioned";
  error: string;
  storageId: string;
  backendLabel: string | undefined;
  retained: boolean;
}

export type ParseOutcome = { ok: true; callback: ParsedCallback } | { ok: false; problem: string };

const STATUSES = new Set(["success", "failed", "deprovisioned"]);
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Reads the capability from the raw query string (without "?"). */
export function parseCapability(
  rawQuery: string,
): { ok: false; problem: string } | ParsedCallback["capability"] {
  const found: { key: string; value: string }[] = [];
  for (const part of rawQuery === "" ? [] : rawQuery.split("&")) {
    const eq = part.indexOf("=");
    const key = eq < 0 ? part : part.slice(0, eq);
    if (key === "operation_id" || key === "lifecycle_id") {
      found.push({ key, value: eq < 0 ? "" : part.slice(eq + 1) });
    }
  }
  if (found.length === 0)
    return { ok: false, problem: "exactly one of operation_id or lifecycle_id is required" };
  if (found.length > 1) {
    return { ok: false, problem: "operation_id and lifecycle_id are mutually exclusive and may appear once" };
  }
  const { key, value } = found[0]!;
  if (!isUuidV4(value)) return { ok: false, problem: `${key} must be a canonical lowercase UUIDv4` };
  return { kind: key === "operation_id" ? "operation" : "lifecycle", id: value };
}

export function parseCallbackBody(body: unknown, capability: ParsedCallback["capability"]): ParseOutcome {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { ok: false, problem: "body must be a JSON object" };
  }
  const o = body as Record<string, unknown>;
  if (!isCanonicalUuid(o.lease_uuid)) return { ok: false, problem: "lease_uuid must be a canonical UUID" };
  if (typeof o.status !== "string" || !STATUSES.has(o.status)) {
    return { ok: false, problem: "status must be success, failed or deprovisioned" };
  }
  const status = o.status as ParsedCallback["status"];
  if (!isUuidV4(o.backend_storage_id)) {
    return { ok: false, problem: "backend_storage_id must be a canonical lowercase UUIDv4" };
  }
  if (o.error !== undefined && typeof o.error !== "string")
    return { ok: false, problem: "error must be a string" };
  if (o.backend !== undefined && typeof o.backend !== "string") {
    return { ok: false, problem: "backend must be a string" };
  }
  if (o.retained !== undefined && typeof o.retained !== "boolean") {
    return { ok: false, problem: "retained must be a boolean" };
  }
  if (o.retained === true && status !== "deprovisioned") {
    return { ok: false, problem: "retained is allowed only with status deprovisioned" };
  }
  if (status === "deprovisioned" && capability.kind === "operation") {
    return { ok: false, problem: "deprovisioned is accepted only on a lifecycle_id URL" };
  }
  if (o.maintenance_id !== undefined) {
    if (!isUuidV4(o.maintenance_id))
      return { ok: false, problem: "maintenance_id must be a canonical UUIDv4" };
    if (capability.kind === "operation" || status === "deprovisioned") {
      return {
        ok: false,
        problem: "maintenance_id is not allowed on an operation_id URL or with deprovisioned",
      };
    }
  }
  if (o.maintenance_admitted_at !== undefined) {
    if (o.maintenance_id === undefined) {
      return { ok: false, problem: "maintenance_admitted_at requires maintenance_id" };
    }
    if (typeof o.maintenance_admitted_at !== "string" || !RFC3339_UTC.test(o.maintenance_admitted_at)) {
      return { ok: false, problem: "maintenance_admitted_at must be an RFC 3339 UTC timestamp ending in Z" };
    }
  }
  return {
    ok: true,
    callback: {
      capability,
      leaseUuid: o.lease_uuid,
      status,
      error: (o.error as string | undefined) ?? "",
      storageId: o.backend_storage_id,
      backendLabel: o.backend as string | undefined,
      retained: o.retained === true,
    },
  };
}
