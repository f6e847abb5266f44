import type { ChainLease } from "../../../chain/port.ts";
import { isCanonicalUuid } from "../../../core/uuid.ts";
import { tenantDiagnostics } from "../../api/diagnostics.ts";
import { ApiError } from "../../api/errors.ts";
import { shortState } from "../chain-view.ts";
import type { DashboardContext } from "../context.ts";
import type { OwnerReads } from "../sources.ts";
import { iso, isoOrNull } from "./shapes.ts";

/**
 * `GET /api/leases/{uuid}`: one lease as the chain, the placement store, the maintenance
 * journal and its owner backend know it. The owner's reads (provision record, releases,
 * usage) are memoized per lease like the chain's, and only the owner is asked (never a
 * search of every backend). Never included: the tenant's payload or manifest, environment
 * values, tokens; strings the tenant controls (image, reasons, messages) are data the page
 * renders as text.
 */
const BACKEND_READ_MS = 5_000;

function badUuid(): ApiError {
  return new ApiError("ERR_API_BAD_LEASE_UUID", 400, "invalid lease UUID format");
}

export async function leaseDetail(ctx: DashboardContext, uuid: string) {
  if (!isCanonicalUuid(uuid)) throw badUuid();
  const { s } = ctx;
  const chainRead = await ctx.chain.lease(uuid);
  const lease = chainRead.ok ? chainRead.lease : undefined;
  if (lease !== undefined && lease.providerUuid !== s.config.providerUuid) throw notFound();
  const placement = s.store.placement(uuid);
  const attempt = s.store.attemptFor(uuid);
  if (lease === undefined && placement === undefined && attempt === undefined) {
    if (!chainRead.ok)
      throw new ApiError("ERR_API_CHAIN_READ", 503, "the chain did not answer; try again shortly", {
        retryAfterSeconds: 5,
      });
    throw notFound();
  }
  const owner = placement?.state === "confirmed" ? placement.owner : undefined;
  const reads = await ctx.ownerReads(uuid, owner, () => readOwner(ctx, uuid, owner));
  const newest = s.maintenance.newest(uuid);
  const command =
    newest === undefined ? undefined : s.maintenance.byMaintenanceId(uuid, newest.maintenanceId);
  return {
    uuid,
    tenant: lease?.tenant ?? null,
    chain:
      lease === undefined
        ? null
        : {
            state: shortState(lease.state),
            created_at: isoOrNull(lease.createdAt?.getTime()),
            closed_at: isoOrNull(lease.closedAt?.getTime()),
            items: lease.items.map((i) => ({ sku: i.skuUuid, quantity: Number(i.quantity) })),
          },
    chain_as_of: iso(chainRead.asOfMs),
    placement:
      placement === undefined
        ? null
        : {
            backend: placement.owner ?? null,
            state: placement.state,
            since: iso(placement.updatedAt),
            candidates: placement.state === "conflict" ? placement.candidates : [],
          },
    attempts:
      attempt === undefined
        ? []
        : [
            {
              id: attempt.operationId,
              backend: attempt.backend,
              kind: attempt.kind,
              outcome: "pending",
              started_at: iso(attempt.createdAt),
              settled_at: null,
            },
          ],
    releases: reads.releases,
    diagnostics: reads.diagnostics,
    events: events(lease, placement, attempt, command),
    usage: reads.usage,
    backend_read: reads.read,
  };
}

function notFound(): ApiError {
  return new ApiError("ERR_API_LEASE_NOT_FOUND", 404, "lease not found");
}

async function readOwner(
  ctx: DashboardContext,
  uuid: string,
  owner: string | undefined,
): Promise<OwnerReads> {
  const client = owner === undefined ? undefined : ctx.s.clients.get(owner);
  if (client === undefined) return { diagnostics: null, releases: [], usage: null, read: "no_owner" };
  const signal = AbortSignal.timeout(BACKEND_READ_MS);
  const [info, releases, usage] = await Promise.allSettled([
    client.provisionInfo(uuid, signal),
    client.releases(uuid, signal),
    client.usage(uuid, signal),
  ]);
  const failed = [info, releases].some((r) => r.status === "rejected");
  return {
    diagnostics: info.status === "fulfilled" && info.value !== undefined ? diagnosticsOf(info.value) : null,
    releases: releases.status === "fulfilled" ? (releases.value ?? []).map(releaseOf) : [],
    // A backend that cannot sample answers "unsupported": no usage, not a failure.
    usage: usage.status === "fulfilled" && usage.value !== undefined ? usageOf(usage.value) : null,
    read: failed ? "failed" : "ok",
  };
}

function diagnosticsOf(record: Record<string, unknown>): Record<string, unknown> {
  const d = tenantDiagnostics(record);
  return {
    status: d.status,
    fail_count: d.failCount,
    reason: d.reason ?? null,
    message: d.message ?? null,
    ...(d.terminalBudget === undefined ? {} : { terminal_budget: d.terminalBudget }),
  };
}

/** A release without its manifest (the tenant's payload) or anything else not listed here. */
function releaseOf(raw: Record<string, unknown>): Record<string, unknown> {
  const text = (k: string) => (typeof raw[k] === "string" && raw[k] !== "" ? (raw[k] as string) : null);
  return {
    version: typeof raw.version === "number" ? raw.version : null,
    status: text("status"),
    image: text("image"),
    created_at: text("created_at"),
    reason: text("reason"),
  };
}

function usageOf(u: {
  sample_interval_seconds: number;
  instances: readonly object[];
}): Record<string, unknown> {
  return { sample_interval_seconds: u.sample_interval_seconds, instances: u.instances };
}

type Placement = ReturnType<DashboardContext["s"]["store"]["placement"]>;
type Attempt = ReturnType<DashboardContext["s"]["store"]["attemptFor"]>;
type Command = ReturnType<DashboardContext["s"]["maintenance"]["byMaintenanceId"]>;

/** The lease's history as the sources date it, oldest first. */
function events(lease: ChainLease | undefined, placement: Placement, attempt: Attempt, command: Command) {
  const out: { at: string; kind: string; detail: string }[] = [];
  const add = (at: Date | number | undefined, kind: string, detail: string) => {
    if (at !== undefined) out.push({ at: iso(typeof at === "number" ? at : at.getTime()), kind, detail });
  };
  if (lease !== undefined) {
    add(lease.createdAt, "chain_created", "lease created on chain");
    add(lease.acknowledgedAt, "chain_acknowledged", "provider acknowledged the lease");
    add(lease.rejectedAt, "chain_rejected", lease.rejectionReason);
    add(lease.closedAt, "chain_closed", lease.closureReason);
    add(lease.expiredAt, "chain_expired", "lease expired");
  }
  if (attempt !== undefined) add(attempt.createdAt, `${attempt.kind}_attempt`, `sent to ${attempt.backend}`);
  if (placement !== undefined)
    add(
      placement.updatedAt,
      placement.state === "confirmed" ? "placement_confirmed" : "placement_conflict",
      placement.state === "confirmed"
        ? `running on ${placement.owner ?? "unknown"}`
        : `claimed by ${placement.candidates.join(", ")}`,
    );
  // The newest restart/update only (the journal's phase and outcome; never its payload).
  if (command !== undefined)
    add(
      Math.floor(command.admittedAtUs / 1000),
      `maintenance_${command.kind}`,
      command.outcome === undefined ? command.phase : `${command.phase}: ${command.outcome}`,
    );
  return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}
