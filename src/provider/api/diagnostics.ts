import type { BackendClient } from "../backend-client/index.ts";
import { type BackendRoute, backendReadFailure } from "./backend-route.ts";

/**
 * A backend's provision record (`GET /provisions/{uuid}`), reduced to what a tenant may
 * see: status, lifetime failure count, and the curated reason/message. A failed record
 * without a reason reads as `Unknown` (the seed's read-boundary default). Operator-side
 * fields (created_at, tenant, anything unknown) are dropped.
 */
export interface Diagnostics {
  status: string;
  failCount: number;
  reason?: string;
  message?: string;
}

export function tenantDiagnostics(record: Record<string, unknown>): Diagnostics {
  const status = String(record.status);
  const out: Diagnostics = {
    status,
    failCount: typeof record.fail_count === "number" && record.fail_count > 0 ? record.fail_count : 0,
  };
  const reason = typeof record.reason === "string" && record.reason !== "" ? record.reason : undefined;
  if (reason !== undefined) out.reason = reason;
  else if (status === "failed") out.reason = "Unknown";
  if (typeof record.message === "string" && record.message !== "") out.message = record.message;
  return out;
}

export type DiagnosticsLookup =
  | { kind: "found"; diagnostics: Diagnostics }
  | { kind: "absent" }
  | { kind: "unknown"; error?: Error };

/**
 * Asks the routed backend for the lease's provision record. "absent" is a fact only when
 * nothing was ever placed here or the confirmed owner says 404; an attempted backend's
 * 404, a record we cannot route, or a failed read leave it "unknown".
 */
export async function lookupDiagnostics(
  route: BackendRoute,
  leaseUuid: string,
  signal: AbortSignal,
): Promise<DiagnosticsLookup> {
  if (route.kind === "none") return { kind: "absent" };
  if (route.kind === "unresolved") return { kind: "unknown" };
  const client: BackendClient = route.client;
  let record: Record<string, unknown> | undefined;
  try {
    record = await client.provisionInfo(leaseUuid, signal);
  } catch (err) {
    return { kind: "unknown", error: backendReadFailure(err) };
  }
  if (record !== undefined) return { kind: "found", diagnostics: tenantDiagnostics(record) };
  return route.kind === "owner" ? { kind: "absent" } : { kind: "unknown" };
}
