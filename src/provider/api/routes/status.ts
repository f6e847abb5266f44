import type { FastifyInstance } from "fastify";
import { LRUCache } from "lru-cache";
import type { TokenClaims } from "../../../auth/token.ts";
import type { ChainLease } from "../../../chain/port.ts";
import { withDeadline } from "../../../core/async/index.ts";
import { FredError } from "../../../core/errors.ts";
import { onLostBackend } from "../../store/index.ts";
import { leaseUuidParam } from "../auth.ts";
import { backendReadFailure, routeRead } from "../backend-route.ts";
import { type TenantContext, tenantRoute } from "../context.ts";
import {
  type Diagnostics,
  type DiagnosticsLookup,
  lookupDiagnostics,
  rejectedDiagnostics,
} from "../diagnostics.ts";
import { refuse } from "../errors.ts";
import { parseInclude } from "../include.ts";
import type { ProvisionRead } from "../provision-reads.ts";
import type { ExtraKey, StatusBody } from "../schemas/lease.ts";

/**
 * `GET /v1/leases/{uuid}/status` (access token, no replay, any state): the chain state
 * as its protobuf enum name, what providerd holds for the lease, and — best effort —
 * the backend's provision status (coalesced per lease; how old it may be: provisionReadTtl). A
 * backend that cannot answer only drops those fields. Retained data adds its retained
 * fields (restore shape, hint, partition, deadline).
 * By default the body has exactly the reference's keys; `?include=` adds ours:
 * `terminal_budget` (the backend's), `credit` (balance, burn per hour and depletion date of
 * the tenant's credit, from the credit monitor; dropped when the chain cannot be read).
 *
 * When the chain has no record of the lease (a lagging or reset node, the wrong chain),
 * the answer comes from the backend's retained record instead, with state
 * LEASE_STATE_UNSPECIFIED, and only to the tenant that record names: anything else is 404.
 */
export function registerStatusRoute(app: FastifyInstance, ctx: TenantContext): void {
  const { payloads, config, logger } = ctx.deps;
  // The last body sent per lease and include set, as JSON, with what it was built from
  // (owned leases only).
  const built = new LRUCache<string, BuiltStatus>({ max: 10_000 });
  app.get(
    "/v1/leases/:lease_uuid/status",
    tenantRoute(ctx, async (req, reply, scope) => {
      const uuid = leaseUuidParam(req);
      const claims = await ctx.auth.authenticate(req, reply, uuid, { kind: "access", replay: false });
      const include = parseInclude(req);
      const lease = await ctx.leases.ownedIfKnown(claims);
      if (lease === undefined)
        return { status: 200, body: await fromRetainedRecord(ctx, uuid, claims, include) };
      let payloadReceived = false;
      try {
        payloadReceived = (await payloads?.has(uuid)) ?? false;
      } catch (err) {
        logger.warn({ err, lease_uuid: uuid }, "payload store unreadable; status reports no payload");
      }
      // A provision in progress always has its attempt recorded (written ahead of the request).
      const started = ctx.deps.store.hasAttempt(uuid);
      // A lease on a backend retired as lost has nothing to ask: it failed, for that reason.
      const lost = onLostBackend(ctx.deps, uuid);
      const found: DiagnosticsLookup = lost
        ? { kind: "unknown" }
        : await sharedDiagnostics(ctx, uuid, lease.state, ctx.deps.maintenance?.revision(uuid) ?? "");
      // An unsettled restart/update is reported as such, never as the ready before it.
      const progress = found.kind === "found" ? ctx.deps.maintenance?.inProgress(uuid) : undefined;
      if (!lost && found.kind === "unknown" && found.error !== undefined) {
        logger.warn({ err: found.error.cause, lease_uuid: uuid }, "status: provision lookup failed");
      }
      let credit: StatusBody["credit"];
      if (include.has("credit") && ctx.deps.credit !== undefined) {
        try {
          credit = await ctx.deps.credit(claims.tenant, scope.signal);
        } catch (err) {
          logger.warn({ err, lease_uuid: uuid }, "status: credit read failed");
        }
      }
      const inputs: BuiltStatus = { lease, found, payloadReceived, started, progress, credit, json: "" };
      const key = `${uuid} ${[...include].sort().join(",")}`;
      const last = built.get(key);
      if (last !== undefined && sameInputs(last, inputs)) return { status: 200, json: last.json };
      const body: StatusBody = {
        lease_uuid: uuid,
        tenant: claims.tenant,
        provider_uuid: config.providerUuid,
        state: lease.state,
        requires_payload: lease.metaHash !== "",
        ...(lease.metaHash === "" ? {} : { meta_hash_hex: lease.metaHash }),
        payload_received: payloadReceived,
        provisioning_started: started,
      };
      if (lost) {
        body.provision_status = "failed";
        body.reason = "BackendStorageLost";
      } else if (found.kind === "found") {
        addDiagnostics(body, found.diagnostics, include);
        if (progress !== undefined) body.provision_status = progress;
      } else if (found.kind === "absent") {
        const rejected = rejectedDiagnostics(lease);
        if (rejected !== undefined) addDiagnostics(body, rejected, include);
      }
      if (credit !== undefined) body.credit = credit;
      inputs.json = JSON.stringify(body);
      built.set(key, inputs);
      return { status: 200, json: inputs.json };
    }),
  );
}

/**
 * One status body as JSON and everything it was built from. The chain lease and the
 * backend's provision record are compared by identity: each is the shared cache entry
 * (TenantLeaseReads, statusReads), replaced whenever it is read again, so "same object" means
 * "same read". The rest are plain values read on this request; the body's other fields
 * (tenant, provider) follow from the lease. So a reused body is exactly the one these
 * inputs would build.
 */
interface BuiltStatus {
  lease: ChainLease;
  found: DiagnosticsLookup;
  payloadReceived: boolean;
  started: boolean;
  progress: string | undefined;
  credit: StatusBody["credit"];
  json: string;
}

function sameInputs(a: BuiltStatus, b: BuiltStatus): boolean {
  return (
    a.lease === b.lease &&
    a.found === b.found &&
    a.payloadReceived === b.payloadReceived &&
    a.started === b.started &&
    a.progress === b.progress &&
    a.credit?.balance === b.credit?.balance &&
    a.credit?.burn_rate_per_hour === b.credit?.burn_rate_per_hour &&
    a.credit?.depletes_at === b.credit?.depletes_at
  );
}

function addDiagnostics(body: StatusBody, d: Diagnostics, include: ReadonlySet<ExtraKey>): void {
  body.provision_status = d.status;
  if (d.failCount > 0) body.fail_count = d.failCount;
  if (include.has("terminal_budget") && d.terminalBudget !== undefined)
    body.terminal_budget = d.terminalBudget;
  if (d.reason !== undefined) body.reason = d.reason;
  if (d.message !== undefined) body.message = d.message;
  Object.assign(body, d.retained);
}

/** The chain does not know the lease: a retained record owned by the caller, or 404. */
async function fromRetainedRecord(
  ctx: TenantContext,
  uuid: string,
  claims: TokenClaims,
  include: ReadonlySet<ExtraKey>,
): Promise<StatusBody> {
  const found = await sharedDiagnostics(ctx, uuid, "LEASE_STATE_UNSPECIFIED", "");
  const d = found.kind === "found" ? found.diagnostics : undefined;
  if (d?.status !== "retained" || d.recordTenant !== claims.tenant) {
    if (d !== undefined && d.status === "retained")
      ctx.logger.warn(
        { lease_uuid: uuid, tenant: claims.tenant },
        "retained record belongs to another tenant",
      );
    throw refuse.leaseNotFound();
  }
  const body: StatusBody = {
    lease_uuid: uuid,
    tenant: claims.tenant,
    provider_uuid: ctx.deps.config.providerUuid,
    state: "LEASE_STATE_UNSPECIFIED",
    requires_payload: false,
    payload_received: false,
    provisioning_started: false,
  };
  addDiagnostics(body, d, include);
  return body;
}

/**
 * One backend read per lease, shared by concurrent polls and reused (provisionReadTtl)
 * while the chain state it was read beside and the lease's maintenance revision stay the
 * same (a lease that just turned ACTIVE, or whose restart/update just moved on, is read
 * afresh); its deadline is its own, not the first caller's. A failed read is thrown out of
 * the coalescer so that it is never reused, and comes back here as "unknown".
 */
async function sharedDiagnostics(
  ctx: TenantContext,
  uuid: string,
  state: ChainLease["state"],
  revision: string,
): Promise<DiagnosticsLookup> {
  // The answer polls get most of the time, without the closures and promise a load needs.
  const remembered = ctx.statusReads.peek(uuid);
  if (remembered !== undefined && remembered.state === state && remembered.revision === revision)
    return remembered.found;
  const { clients, clock } = ctx.deps;
  // Past the deadline the read fails as a failed backend read does (a 500 when it decides the answer).
  const timedOut = () =>
    backendReadFailure(new FredError("ERR_BACKEND_TIMEOUT", "lease diagnostics: no backend answer in time"));
  const load = async (): Promise<ProvisionRead> => {
    const found = await withDeadline(clock, ctx.requestTimeoutMs, undefined, timedOut, (signal) =>
      lookupDiagnostics(routeRead(ctx.deps, clients, uuid), clients, uuid, signal),
    );
    if (found.kind === "unknown" && found.error !== undefined) throw found.error;
    return { found, state, revision };
  };
  try {
    let read = await ctx.statusReads.get(uuid, load);
    if (read.state !== state || read.revision !== revision) {
      ctx.statusReads.invalidate(uuid);
      read = await ctx.statusReads.get(uuid, load);
    }
    return read.found;
  } catch (err) {
    return { kind: "unknown", error: err as Error };
  }
}
