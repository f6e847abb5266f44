import { createHash } from "node:crypto";
import { decodeBase64Std, decodeHex } from "../../core/encoding.ts";
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import { CallbackUrlError, type CallbackUrls, resolveCallbackUrls } from "./callback-url.ts";
import type { InstanceSpec, LeaseItem, SkuProfile } from "./substrate.ts";

/**
 * Parsing of the backend contract's request bodies into checked values. Every refusal is
 * a `WireError` (400 at the HTTP edge) with a message safe to show the caller; unknown
 * body keys are ignored, as the reference does.
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

export const DEFAULT_SERVICE = "app";
const SERVICE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_ITEMS = 64;
const MAX_QUANTITY = 1000;
const MAX_TENANT_LENGTH = 256;
const MAX_DOMAIN_LENGTH = 253;
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

export interface ProvisionRequest extends CallbackUrls {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  items: LeaseItem[];
  payload: Buffer | undefined;
  /** sha256 hex of the payload (computed when the caller sent none). */
  payloadHash: string | undefined;
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new WireError("request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

export function parseLeaseUuid(value: unknown, field = "lease_uuid"): string {
  if (value === undefined || value === null || value === "") throw new WireError(`${field} is required`);
  if (!isCanonicalUuid(value)) throw new WireError(`${field} must be a canonical lowercase UUID`);
  return value;
}

export function parseItems(value: unknown): LeaseItem[] {
  if (!Array.isArray(value) || value.length === 0) throw new WireError("items must be a non-empty array");
  if (value.length > MAX_ITEMS) throw new WireError(`items may hold at most ${MAX_ITEMS} entries`);
  const items: LeaseItem[] = [];
  for (const [i, raw] of value.entries()) {
    const o = asObjectAt(raw, i);
    if (!isCanonicalUuid(o.sku)) throw new WireError(`items[${i}].sku must be a canonical lowercase UUID`);
    const q = o.quantity;
    if (typeof q !== "number" || !Number.isInteger(q) || q < 1 || q > MAX_QUANTITY) {
      throw new WireError(`items[${i}].quantity must be an integer from 1 to ${MAX_QUANTITY}`);
    }
    const item: LeaseItem = { sku: o.sku, quantity: q };
    if (o.service_name !== undefined && o.service_name !== "") {
      if (typeof o.service_name !== "string" || !SERVICE_NAME.test(o.service_name)) {
        throw new WireError(`items[${i}].service_name must be a lowercase DNS label`);
      }
      item.service_name = o.service_name;
    }
    if (o.custom_domain !== undefined && o.custom_domain !== "") {
      if (typeof o.custom_domain !== "string" || o.custom_domain.length > MAX_DOMAIN_LENGTH) {
        throw new WireError(`items[${i}].custom_domain must be a domain name`);
      }
      item.custom_domain = o.custom_domain;
    }
    items.push(item);
  }
  const named = items.filter((it) => it.service_name !== undefined).length;
  if (named !== 0 && named !== items.length)
    throw new WireError("items must be all named or a single unnamed item");
  if (named === 0 && items.length > 1) throw new WireError("only a single item may omit service_name");
  const names = new Set(items.map((it) => it.service_name ?? DEFAULT_SERVICE));
  if (names.size !== items.length) throw new WireError("items must not repeat a service_name");
  return items;
}

function asObjectAt(raw: unknown, i: number): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new WireError(`items[${i}] must be an object`);
  }
  return raw as Record<string, unknown>;
}

export function parseProvisionRequest(body: unknown): ProvisionRequest {
  const o = asObject(body);
  const leaseUuid = parseLeaseUuid(o.lease_uuid);
  if (typeof o.tenant !== "string" || o.tenant === "" || o.tenant.length > MAX_TENANT_LENGTH) {
    throw new WireError("tenant is required");
  }
  const providerUuid = parseLeaseUuid(o.provider_uuid, "provider_uuid");
  const items = parseItems(o.items);
  let urls: CallbackUrls;
  try {
    urls = resolveCallbackUrls(o.callback_url, o.lifecycle_callback_url);
  } catch (err) {
    if (err instanceof CallbackUrlError) throw new WireError(err.message);
    throw err;
  }
  let payload: Buffer | undefined;
  let payloadHash: string | undefined;
  if (o.payload !== undefined && o.payload !== null && o.payload !== "") {
    try {
      payload = decodeBase64Std(o.payload as string, "payload", MAX_PAYLOAD_BYTES);
    } catch (err) {
      throw new WireError((err as Error).message);
    }
    if (payload.length > MAX_PAYLOAD_BYTES) throw new WireError("payload is too large");
    payloadHash = createHash("sha256").update(payload).digest("hex");
    if (o.payload_hash !== undefined && o.payload_hash !== "") {
      let sent: Buffer;
      try {
        sent = decodeHex(o.payload_hash as string, "payload_hash", 32);
      } catch (err) {
        throw new WireError((err as Error).message);
      }
      if (sent.toString("hex") !== payloadHash) throw new WireError("payload_hash does not match payload");
    }
  } else if (o.payload_hash !== undefined && o.payload_hash !== "") {
    throw new WireError("payload_hash requires payload");
  }
  return { leaseUuid, tenant: o.tenant, providerUuid, items, ...urls, payload, payloadHash };
}

export function parseDeprovisionRequest(body: unknown): { leaseUuid: string } {
  return { leaseUuid: parseLeaseUuid(asObject(body).lease_uuid) };
}

export function parseReconcileCustomDomainRequest(body: unknown): { leaseUuid: string; items: LeaseItem[] } {
  const o = asObject(body);
  return { leaseUuid: parseLeaseUuid(o.lease_uuid), items: parseItems(o.items) };
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
