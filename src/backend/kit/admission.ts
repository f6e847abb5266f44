import { createHash } from "node:crypto";
import { DEFAULT_SERVICE, LIMITS, type ProvisionRequest } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { parseManifest, parseRegistry, redactManifestPayload } from "../../core/manifest/index.ts";
import { badRequest, conflict, insufficientResources, WireError } from "./errors.ts";
import type { Journal, LeaseRecord } from "./journal/journal.ts";
import type { ResourcePool } from "./resources.ts";
import type {
  InstanceSpec,
  LeaseItem,
  ParsedManifest,
  SkuProfile,
  Substrate,
  WorkloadSpec,
} from "./substrate.ts";

export { ImageReferenceError, parseRegistry } from "../../core/manifest/index.ts";

/**
 * Provision admission: everything decided before the 202. Order matters — redelivery
 * probe first (a closed lease is refused whatever the operation id; an identical retry is
 * acknowledged without re-validating, a differing one refused), then the head, then validation, then capacity — and the final check + reserve +
 * persist runs synchronously, so no other request can slip in between. Validation's own
 * steps live here too: items expanded into instances (`buildInstances`, restore's as
 * well), the tenant manifest parser backends hand the kit as its `parseManifest` hook,
 * and the operator's registry allowlist (`imageRefusal`). After the 202, `workloadSpec` and
 * `withPinnedImages` turn an admitted lease into the spec a substrate creates (the engine's
 * provision and the maintenance runner's restart and update both go through them).
 */
export interface AdmissionConfig {
  journal: Journal;
  pool: ResourcePool;
  clock: Clock;
  backendName: string;
  resolveSku(sku: string): SkuProfile | undefined;
  /** Parses payload bytes; throws WireError("…", "invalid_manifest") on a bad manifest. */
  parseManifest?: (payload: Uint8Array) => ParsedManifest;
  /** Refuse provisions without a payload (backends that run manifests). */
  requirePayload: boolean;
  /** Registry domains images may come from; undefined = no allowlist. */
  allowedRegistries: readonly string[] | undefined;
  reservationTtlMs: number;
}

export type Admission =
  | { kind: "acknowledged"; lease: LeaseRecord | undefined; operationId: string }
  | { kind: "admitted"; lease: LeaseRecord };

export interface Prepared {
  req: ProvisionRequest;
  instances: InstanceSpec[];
  manifest: ParsedManifest | undefined;
  image: string;
}

/** Sync checks that may end the request early (closed, redelivery ack or conflict, busy). */
export function probe(cfg: AdmissionConfig, req: ProvisionRequest): Admission | undefined {
  const { journal } = cfg;
  // A close is final: neither a new operation nor a redelivered one provisions the lease again.
  if (journal.isTombstoned(req.leaseUuid)) throw closedLease();
  const existing = journal.getLease(req.leaseUuid);
  if (existing?.head === "close") throw closedLease();
  const op = journal.operation(req.operationId);
  if (op !== undefined) {
    if (op.leaseUuid !== req.leaseUuid) throw conflict("operation id is already used by another lease");
    // Journals older than the digest compare the current operation against its lease row.
    const admitted =
      op.requestDigest ?? (existing?.operationId === req.operationId ? requestDigest(existing) : undefined);
    if (admitted !== undefined && admitted !== requestDigest(req)) {
      throw conflict(
        "operation was admitted with a different request; the admitted request stands",
        "already_provisioned",
      );
    }
    return { kind: "acknowledged", lease: existing, operationId: req.operationId };
  }
  if (existing && !(existing.head === "none" && existing.status === "failed")) {
    throw conflict("lease is already provisioned", "already_provisioned");
  }
  return undefined;
}

const closedLease = () => conflict("lease is closed and cannot be provisioned again");

/**
 * What a provision asks for, as a sha256 hex: tenant, provider, items (in service order)
 * and payload hash. Callback URLs are left out: they say where the result goes, not what
 * is asked, and the operation id they carry is the key this digest is stored under.
 */
export function requestDigest(
  r: Pick<ProvisionRequest, "tenant" | "providerUuid" | "items" | "payloadHash">,
): string {
  const items = r.items
    .map((i) => [i.service_name ?? DEFAULT_SERVICE, i.sku, i.quantity, i.custom_domain ?? ""] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const doc = JSON.stringify([r.tenant, r.providerUuid, items, r.payloadHash ?? ""]);
  return createHash("sha256").update(doc).digest("hex");
}

/**
 * Expands items into instances (services sorted by name, indexes ascending) with their
 * SKU profile frozen now. Unknown SKUs are a validation refusal.
 */
export function buildInstances(
  leaseUuid: string,
  items: readonly LeaseItem[],
  resolveSku: (sku: string) => SkuProfile | undefined,
): InstanceSpec[] {
  const sorted = [...items].sort((a, b) =>
    (a.service_name ?? DEFAULT_SERVICE).localeCompare(b.service_name ?? DEFAULT_SERVICE),
  );
  const out: InstanceSpec[] = [];
  for (const item of sorted) {
    const profile = resolveSku(item.sku);
    if (profile === undefined) throw new WireError(`unknown SKU ${item.sku}`, "unknown_sku");
    const service = item.service_name ?? DEFAULT_SERVICE;
    for (let index = 0; index < item.quantity; index++) {
      out.push({
        key: `${leaseUuid}-${service}-${index}`,
        service,
        index,
        sku: item.sku,
        profile: { ...profile },
      });
    }
  }
  return out;
}

/**
 * The tenant manifest parser as the kit's `parseManifest` hook: bad manifests become a
 * 400 `invalid_manifest` listing the first problems (JSON pointer + message).
 */
const SHOWN_PROBLEMS = 5;

export function parseTenantManifest(payload: Uint8Array): ParsedManifest {
  const result = parseManifest(payload, { maxBytes: LIMITS.payloadBytes });
  if (!result.ok) {
    const shown = result.problems.slice(0, SHOWN_PROBLEMS).map((p) => `${p.path || "/"}: ${p.message}`);
    const more =
      result.problems.length > SHOWN_PROBLEMS ? ` (+${result.problems.length - SHOWN_PROBLEMS} more)` : "";
    throw new WireError(`invalid manifest: ${shown.join("; ")}${more}`, "invalid_manifest");
  }
  return result.manifest;
}

/** Validation that needs no lock: SKUs, manifest, images, service names. */
export function prepare(cfg: AdmissionConfig, req: ProvisionRequest): Prepared {
  try {
    const instances = buildInstances(req.leaseUuid, req.items, cfg.resolveSku);
    let manifest: ParsedManifest | undefined;
    if (req.payload !== undefined && cfg.parseManifest) manifest = cfg.parseManifest(req.payload);
    if (manifest === undefined && cfg.requirePayload) {
      throw new WireError("payload (the lease manifest) is required", "invalid_manifest");
    }
    let image = "";
    if (manifest) {
      const services = Object.keys(manifest.services).sort();
      const itemNames = req.items.map((i) => i.service_name ?? DEFAULT_SERVICE).sort();
      if (services.join("\n") !== itemNames.join("\n")) {
        throw new WireError(
          `manifest services [${services.join(", ")}] do not match lease items [${itemNames.join(", ")}]`,
          "invalid_manifest",
        );
      }
      for (const name of services) {
        const svcImage = manifest.services[name]?.image ?? "";
        if (cfg.allowedRegistries !== undefined) {
          const refusal = imageRefusal(svcImage, cfg.allowedRegistries);
          if (refusal !== undefined) throw new WireError(`service ${name}: ${refusal}`, "image_not_allowed");
        }
      }
      image = services.length === 1 ? (manifest.services[services[0] as string]?.image ?? "") : "stack";
    }
    return { req, instances, manifest, image };
  } catch (err) {
    if (err instanceof WireError) throw badRequest(err.message, err.validationCode);
    throw err;
  }
}

/** The atomic part: re-probe, reserve capacity, persist the intent. */
export function admit(cfg: AdmissionConfig, p: Prepared, reprobe = true): Admission {
  const early = reprobe ? probe(cfg, p.req) : undefined;
  if (early) return early;
  if (cfg.journal.leaseCount() >= cfg.journal.maxLeases) {
    throw insufficientResources("backend journal is at its lease capacity");
  }
  const now = cfg.clock.now();
  const refusal = cfg.pool.allocate(
    p.req.leaseUuid,
    p.req.tenant,
    p.instances,
    "reserved",
    now + cfg.reservationTtlMs,
  );
  if (refusal === "duplicate") throw conflict("lease is already provisioned", "already_provisioned");
  if (refusal !== undefined) throw insufficientResources(`insufficient resources (${refusal})`);
  try {
    const lease = cfg.journal.admitOperation({
      leaseUuid: p.req.leaseUuid,
      tenant: p.req.tenant,
      providerUuid: p.req.providerUuid,
      operationId: p.req.operationId,
      callbackUrl: p.req.callbackUrl,
      lifecycleUrl: p.req.lifecycleUrl,
      items: p.req.items,
      instances: p.instances,
      payload: p.req.payload,
      payloadHash: p.req.payloadHash,
      image: p.image,
      requestDigest: requestDigest(p.req),
      nowMs: now,
    });
    return { kind: "admitted", lease };
  } catch (err) {
    cfg.pool.release(p.req.leaseUuid);
    throw err;
  }
}

/** The immutable workload description handed to the substrate for a lease's current release. */
export function workloadSpec(
  lease: LeaseRecord,
  backendName: string,
  storageId: string,
  parseManifest: AdmissionConfig["parseManifest"],
  images?: Readonly<Record<string, string>>,
): WorkloadSpec {
  let manifest: ParsedManifest | undefined;
  if (lease.payload !== undefined && parseManifest) {
    try {
      manifest = parseManifest(lease.payload);
    } catch {
      manifest = undefined;
    }
  }
  return {
    leaseUuid: lease.leaseUuid,
    tenant: lease.tenant,
    providerUuid: lease.providerUuid,
    operationId: lease.operationId,
    release: lease.release,
    backendName,
    storageId,
    items: lease.items,
    instances: lease.instances,
    payload: lease.payload,
    manifest,
    createdAtMs: lease.createdAtMs,
    ...(images === undefined ? {} : { images }),
  };
}

/**
 * The operator's registry allowlist over image references (see core/manifest/rules.ts for
 * how a reference names its registry). It compares domains exactly: no wildcards, and a
 * port is part of the domain.
 */
export function isImageAllowed(image: string, allowed: readonly string[]): boolean {
  try {
    return allowed.includes(parseRegistry(image));
  } catch {
    return false;
  }
}

/** Returns a tenant-safe refusal message, or undefined when the image may be used. */
export function imageRefusal(image: string, allowed: readonly string[]): string | undefined {
  let domain: string;
  try {
    domain = parseRegistry(image);
  } catch (err) {
    return (err as Error).message;
  }
  if (allowed.includes(domain)) return undefined;
  return `image registry ${JSON.stringify(domain)} is not allowed (allowed: ${allowed.join(", ") || "none"})`;
}

// Pinned images: the last step before a spec is created.

/**
 * Pins a release's images before anything is created from them: the substrate resolves
 * each service's reference (`resolveImages`), the journal records the result with the
 * release (durably, so a crash after the pull never re-resolves a moved tag for the same
 * release), and the spec carries it from then on. A spec already pinned, or a substrate
 * without pinning, passes through unchanged.
 *
 * `reuse`: a re-provision of the lease with the same manifest (after its workload was lost
 * or failed) keeps the images the newest earlier release of that manifest was pinned to,
 * instead of following tags that may have moved since; a different manifest resolves anew.
 */
export async function withPinnedImages(
  journal: Journal,
  substrate: Substrate,
  spec: WorkloadSpec,
  signal: AbortSignal,
  reuse: boolean,
): Promise<WorkloadSpec> {
  if (spec.images !== undefined || substrate.resolveImages === undefined) return spec;
  const images =
    (reuse ? sameManifestPins(journal, spec) : undefined) ?? (await substrate.resolveImages(spec, signal));
  journal.pinImages(spec.leaseUuid, spec.release, images);
  await journal.durable();
  return { ...spec, images };
}

function sameManifestPins(
  journal: Journal,
  spec: WorkloadSpec,
): Readonly<Record<string, string>> | undefined {
  if (spec.payload === undefined) return undefined;
  const manifest = Buffer.from(redactManifestPayload(spec.payload));
  const earlier = journal
    .releases(spec.leaseUuid)
    .filter((r) => r.version < spec.release && r.images !== undefined && r.manifest?.equals(manifest));
  return earlier.at(-1)?.images;
}
