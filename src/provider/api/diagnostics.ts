import type { ChainLease } from "../../chain/port.ts";
import { readTerminalBudget, type TerminalBudgetBody } from "../../core/backend-contract/index.ts";
import type { BackendClient } from "../backend-client/index.ts";
import { type RetainedFields, retainedFields } from "../retention/index.ts";
import { type BackendRoute, backendReadFailure, searchBackends } from "./backend-route.ts";

/**
 * A backend's provision record (`GET /provisions/{uuid}`), reduced to what a tenant may
 * see: status, lifetime failure count, the consecutive-failure budget when the backend
 * reports one on the contract's shape, and the curated reason/message. A failed record
 * without a reason reads as `Unknown` (the seed's read-boundary default). Operator-side
 * fields (created_at, tenant, anything unknown) are dropped.
 */
export interface Diagnostics {
  status: string;
  failCount: number;
  terminalBudget?: TerminalBudgetBody;
  reason?: string;
  message?: string;
  /** Present only when status is retained (src/provider/retention/retained-fields.ts). */
  retained?: RetainedFields;
  /** The tenant the backend's record names: authorises an answer the chain cannot (never sent). */
  recordTenant?: string;
}

export function tenantDiagnostics(record: Record<string, unknown>): Diagnostics {
  const status = String(record.status);
  const out: Diagnostics = {
    status,
    failCount: typeof record.fail_count === "number" && record.fail_count > 0 ? record.fail_count : 0,
  };
  const budget = readTerminalBudget(record);
  if (budget !== undefined) out.terminalBudget = budget;
  const reason = typeof record.reason === "string" && record.reason !== "" ? record.reason : undefined;
  if (reason !== undefined) out.reason = reason;
  else if (status === "failed") out.reason = "Unknown";
  if (typeof record.message === "string" && record.message !== "") out.message = record.message;
  const retained = status === "retained" ? retainedFields(record) : undefined;
  if (retained !== undefined) out.retained = retained;
  if (typeof record.tenant === "string" && record.tenant !== "") out.recordTenant = record.tenant;
  return out;
}

/**
 * The record of a lease the chain shows REJECTED that no backend holds: it was refused
 * before anything ran (a synchronous refusal, a cancel by its tenant, a wait that ran
 * out), so the chain's rejection reason is all there is, and it is public already.
 * Reason `Rejected` (an addition to the seed's open set) says the lease never ran.
 */
export function rejectedDiagnostics(lease: ChainLease): Diagnostics | undefined {
  if (lease.state !== "LEASE_STATE_REJECTED") return undefined;
  return {
    status: "failed",
    failCount: 0,
    reason: "Rejected",
    message: lease.rejectionReason === "" ? "the lease was rejected" : lease.rejectionReason,
  };
}

export type DiagnosticsLookup =
  | { kind: "found"; diagnostics: Diagnostics }
  | { kind: "absent" }
  | { kind: "unknown"; error?: Error };

/**
 * Asks for the lease's provision record: its confirmed owner; with no placement record,
 * every backend (one may keep the diagnostics of a failed or closed lease); with only an
 * unsettled attempt, the attempted backend. "absent" is said only when it is known: the
 * owner has no record, or no backend has one. An attempted backend's 404, a record we
 * cannot route, or a failed read leave it "unknown".
 */
export async function lookupDiagnostics(
  route: BackendRoute,
  clients: ReadonlyMap<string, BackendClient>,
  leaseUuid: string,
  signal: AbortSignal,
): Promise<DiagnosticsLookup> {
  if (route.kind === "unresolved") return { kind: "unknown" };
  const read = (client: BackendClient) => client.provisionInfo(leaseUuid, signal);
  let record: Record<string, unknown> | undefined;
  try {
    record = route.kind === "none" ? await searchBackends(clients, read) : await read(route.client);
  } catch (err) {
    return { kind: "unknown", error: backendReadFailure(err) };
  }
  if (record !== undefined) return { kind: "found", diagnostics: tenantDiagnostics(record) };
  return route.kind === "attempt" ? { kind: "unknown" } : { kind: "absent" };
}
