import {
  DEFAULT_SERVICE,
  type ProvisionRequest,
  parseWith,
  resolveCallbackUrls,
  restoreRequestSchema,
} from "../../../core/backend-contract/index.ts";
import { isFredError } from "../../../core/errors.ts";
import { type AdmissionConfig, buildInstances, probe, requestDigest } from "../admission.ts";
import {
  badRequest,
  conflict,
  demoteExceedsTier,
  insufficientResources,
  notRetained,
  WireError,
} from "../errors.ts";
import type { LeaseRecord } from "../journal/journal.ts";
import type { InstanceSpec, LeaseItem } from "../substrate.ts";
import type { Retention } from "./manager.ts";
import type { RetentionRow } from "./store.ts";

/**
 * `POST /restore` admission, everything decided before the 202: a redelivery probe on the
 * operation id, the source (only the caller's own active retained lease; anything else is
 * the bare 422 that tells nothing), the item shape, the demote fit against the measured
 * data, capacity, then one transaction that persists the destination's intent and claims
 * the source row. The engine's provision worker runs the rest (see Retention.beforeCreate).
 */
export type RestoreAdmission = { kind: "admitted"; lease: LeaseRecord } | { kind: "acknowledged" };

const MIB = 1024 * 1024;

export function admitRestore(cfg: AdmissionConfig, retention: Retention, body: unknown): RestoreAdmission {
  const parsed = parseWith(restoreRequestSchema, body);
  if (!parsed.ok) throw badRequest(parsed.problem);
  const o = parsed.value;
  let urls: ReturnType<typeof resolveCallbackUrls>;
  try {
    urls = resolveCallbackUrls(o.callback_url, o.lifecycle_callback_url);
  } catch (err) {
    if (isFredError(err)) throw badRequest(err.message);
    throw err;
  }
  if (o.tenant === "") throw badRequest("tenant is required");
  if (o.lease_uuid === o.from_lease_uuid) throw badRequest("lease_uuid and from_lease_uuid must differ");
  const req: ProvisionRequest = {
    leaseUuid: o.lease_uuid,
    tenant: o.tenant,
    providerUuid: o.provider_uuid,
    items: o.items,
    ...urls,
    payload: undefined,
    // What a restore asks for is the source's data: the digest binds the operation to it.
    payloadHash: `restore:${o.from_lease_uuid}`,
  };
  if (probe(cfg, req)?.kind === "acknowledged") return { kind: "acknowledged" };
  // Only a fresh lease takes retained data (a failed one may hold volumes of its own).
  if (cfg.journal.getLease(o.lease_uuid) !== undefined)
    throw conflict("lease is already provisioned", "already_provisioned");

  const source = retention.store.get(o.from_lease_uuid);
  const visible =
    source !== undefined &&
    source.tenant === o.tenant &&
    source.providerUuid === o.provider_uuid &&
    (source.status === "active" || source.status === "restoring");
  if (!visible) throw notRetained();
  if (source.status === "restoring") throw conflict("the retained lease is already being restored");
  const mismatch = shapeMismatch(source.items, o.items);
  if (mismatch !== undefined) throw badRequest(`items do not match the retained set: ${mismatch}`);
  let instances: InstanceSpec[];
  try {
    instances = buildInstances(o.lease_uuid, o.items, cfg.resolveSku);
  } catch (err) {
    if (err instanceof WireError) throw badRequest(err.message, err.validationCode);
    throw err;
  }
  const tooBig = demoteProblem(source, instances);
  if (tooBig !== undefined) throw demoteExceedsTier(tooBig);

  const { journal, pool } = cfg;
  if (journal.leaseCount() >= journal.maxLeases) {
    throw insufficientResources("backend journal is at its lease capacity");
  }
  const now = cfg.clock.now();
  // The source's bytes move from the retained projection into the destination's
  // reservation, so a promote is gated on the difference only.
  pool.setRetainedDisk(retention.retainedDiskMb(source.leaseUuid));
  const refusal = pool.allocate(o.lease_uuid, o.tenant, instances, "reserved", now + cfg.reservationTtlMs);
  if (refusal !== undefined) {
    pool.setRetainedDisk(retention.retainedDiskMb());
    if (refusal === "duplicate") throw conflict("lease is already provisioned", "already_provisioned");
    throw insufficientResources(`insufficient resources (${refusal})`);
  }
  try {
    const lease = retention.store.tx(() => {
      const admitted = journal.admitOperation({
        leaseUuid: o.lease_uuid,
        tenant: o.tenant,
        providerUuid: o.provider_uuid,
        operationId: urls.operationId,
        callbackUrl: urls.callbackUrl,
        lifecycleUrl: urls.lifecycleUrl,
        items: o.items,
        instances,
        payload: source.payload,
        payloadHash: source.payloadHash,
        image: source.image,
        requestDigest: requestDigest(req),
        nowMs: now,
      });
      if (!retention.store.claim(source, o.lease_uuid, urls.operationId))
        throw conflict("the retained lease is already being restored");
      return admitted;
    });
    return { kind: "admitted", lease };
  } catch (err) {
    pool.release(o.lease_uuid);
    throw err;
  } finally {
    pool.setRetainedDisk(retention.retainedDiskMb());
  }
}

/** Same service names with the same summed quantities (the SKU, hence the tier, may differ). */
function shapeMismatch(retained: readonly LeaseItem[], asked: readonly LeaseItem[]): string | undefined {
  const shape = (items: readonly LeaseItem[]) => {
    const m = new Map<string, number>();
    for (const i of items) {
      const name = i.service_name ?? DEFAULT_SERVICE;
      m.set(name, (m.get(name) ?? 0) + i.quantity);
    }
    return [...m].sort(([a], [b]) => a.localeCompare(b));
  };
  const want = shape(retained);
  const got = shape(asked);
  const text = (s: [string, number][]) => s.map(([n, q]) => `${n}×${q}`).join(", ");
  return JSON.stringify(want) === JSON.stringify(got)
    ? undefined
    : `retained [${text(want)}], asked [${text(got)}]`;
}

/** Each retained volume must fit the new instance's disk_mb (measured bytes, not the old tier). */
function demoteProblem(source: RetentionRow, instances: readonly InstanceSpec[]): string | undefined {
  for (const v of source.volumes) {
    const target = instances.find((i) => i.service === v.service && i.index === v.index);
    const capBytes = (target?.profile.disk_mb ?? 0) * MIB;
    if (v.bytes > capBytes) {
      const usedMb = Math.ceil(v.bytes / MIB);
      return `${v.service}/${v.index} holds ${usedMb} MiB, the tier allows ${target?.profile.disk_mb ?? 0} MiB`;
    }
  }
  return undefined;
}
