import { z } from "zod";
import {
  DEFAULT_SERVICE,
  deprovisionRequestSchema,
  LIMITS,
  leaseItemsSchema,
  type MaintenanceRequest,
  type ProvisionRequest,
  parseWith,
  provisionRequestSchema,
  reconcileCustomDomainRequestSchema,
  restartRequestSchema,
  updateRequestSchema,
} from "../../core/backend-contract/index.ts";
import { FredError } from "../../core/errors.ts";
import type { InstanceSpec, LeaseItem, SkuProfile } from "./substrate.ts";

/**
 * The kit's side of the backend contract's request bodies: the contract's readers
 * (src/core/backend-contract) turned into checked values. Every refusal is a `WireError`
 * (400 at the HTTP edge) with a message safe to show the caller.
 */
export class WireError extends FredError<"ERR_WIRE"> {
  constructor(
    message: string,
    readonly validationCode?: "unknown_sku" | "invalid_manifest" | "image_not_allowed",
  ) {
    super("ERR_WIRE", message);
    this.name = "WireError";
  }
}

export { DEFAULT_SERVICE, type ProvisionRequest };
export const MAX_PAYLOAD_BYTES = LIMITS.payloadBytes;

function read<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = parseWith(schema, input);
  if (!parsed.ok) throw new WireError(parsed.problem);
  return parsed.value;
}

/** A lease UUID from a path parameter, with the body field's messages. */
export function parseLeaseUuid(value: unknown): string {
  return read(deprovisionRequestSchema, { lease_uuid: value }).lease_uuid;
}

const itemsOnly = z.object({ items: leaseItemsSchema });

/** Lease items on their own, with the body field's messages (`items[0].sku …`). */
export function parseItems(value: unknown): LeaseItem[] {
  return read(itemsOnly, { items: value }).items;
}

export function parseProvisionRequest(body: unknown): ProvisionRequest {
  return read(provisionRequestSchema, body);
}

export function parseDeprovisionRequest(body: unknown): { leaseUuid: string } {
  return { leaseUuid: read(deprovisionRequestSchema, body).lease_uuid };
}

export function parseMaintenanceRequest(kind: MaintenanceRequest["kind"], body: unknown): MaintenanceRequest {
  return read(kind === "restart" ? restartRequestSchema : updateRequestSchema, body);
}

export function parseReconcileCustomDomainRequest(body: unknown): { leaseUuid: string; items: LeaseItem[] } {
  const o = read(reconcileCustomDomainRequestSchema, body);
  return { leaseUuid: o.lease_uuid, items: o.items };
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
