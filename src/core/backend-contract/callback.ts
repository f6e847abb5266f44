import { z } from "zod";
import { isUuidV4 } from "../uuid.ts";
import { at, type CapabilityKey, canonicalUuid, capabilityParams, parseWith, typedOnly } from "./requests.ts";

/**
 * The callback a backend POSTs to providerd's callback URL, and providerd's readers of it:
 * the capability in the URL's query, then the body. The body's own operation_id /
 * lifecycle_id are untrusted and ignored: the capability comes from the URL query (whose
 * rules requests.ts holds, beside the backend's reading of a provision's callback URLs).
 */

export type Capability = { kind: "operation" | "lifecycle"; id: string };
const KINDS: Record<CapabilityKey, Capability["kind"]> = {
  operation_id: "operation",
  lifecycle_id: "lifecycle",
};

/**
 * providerd's callback URL for one capability: `<base>/callbacks/provision?<base query&>`
 * then `operation_id=<id>` or `lifecycle_id=<id>`. `base` is the operator's checked
 * callback base (origin, a canonical path without a trailing slash, a query or "").
 */
export function buildCallbackUrl(
  base: { origin: string; path: string; query: string },
  key: CapabilityKey,
  id: string,
): string {
  const query = base.query === "" ? "" : `${base.query}&`;
  return `${base.origin}${base.path}/callbacks/provision?${query}${key}=${id}`;
}

/** providerd's reading of an inbound callback's query (without "?"): the capability, or why not. */
export function parseCapability(rawQuery: string): Capability | { ok: false; problem: string } {
  const found = capabilityParams(rawQuery);
  const refuse = (problem: string) => ({ ok: false as const, problem });
  if (found.length === 0) return refuse("exactly one of operation_id or lifecycle_id is required");
  if (found.length > 1)
    return refuse("operation_id and lifecycle_id are mutually exclusive and may appear once");
  const { key, value } = found[0] as (typeof found)[number];
  if (!isUuidV4(value)) return refuse(`${key} must be a canonical lowercase UUIDv4`);
  return { kind: KINDS[key], id: value };
}

/** A canonical lowercase v4 UUID (ids we mint: operations, storage identities). */
const uuidV4 = (text = "must be a canonical lowercase UUIDv4") =>
  z.custom<string>(isUuidV4, { error: at(text) });

export const CALLBACK_STATUSES = ["success", "failed", "deprovisioned"] as const;
export type CallbackStatus = (typeof CALLBACK_STATUSES)[number];

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const isString = (text: string) => z.string({ error: text }).optional();

export const callbackBodySchema = z.object(
  {
    lease_uuid: canonicalUuid("must be a canonical UUID"),
    status: z.enum(CALLBACK_STATUSES, { error: "status must be success, failed or deprovisioned" }),
    backend_storage_id: uuidV4(),
    /** Generic on purpose: it may end up on chain. */
    error: isString("error must be a string"),
    /** The backend's name. */
    backend: isString("backend must be a string"),
    /** Only with `deprovisioned`: the volumes were kept (soft delete). */
    retained: z.boolean({ error: "retained must be a boolean" }).optional(),
    // Checked by `callbackRules`, after the rules that come before them.
    maintenance_id: typedOnly<string>(),
    maintenance_admitted_at: typedOnly<string>(),
  },
  { error: "body must be a JSON object" },
);

/** What a backend sends (the kit's outbox builds exactly this). */
export type CallbackBody = z.input<typeof callbackBodySchema>;
type CallbackFields = z.output<typeof callbackBodySchema>;

/** A callback as providerd applies it. */
export interface ParsedCallback {
  capability: Capability;
  leaseUuid: string;
  status: CallbackStatus;
  error: string;
  storageId: string;
  backendLabel: string | undefined;
  retained: boolean;
  /** On an exact restart/update completion: the command it completes, and its echoed stamp. */
  maintenanceId?: string;
  maintenanceAdmittedAt?: string;
}

/** The rules that relate fields to each other and to the URL's capability, in order. */
function callbackProblem(o: CallbackFields, capability: Capability): string | undefined {
  if (o.retained === true && o.status !== "deprovisioned") {
    return "retained is allowed only with status deprovisioned";
  }
  if (o.status === "deprovisioned" && capability.kind === "operation") {
    return "deprovisioned is accepted only on a lifecycle_id URL";
  }
  if (o.maintenance_id !== undefined) {
    if (!isUuidV4(o.maintenance_id)) return "maintenance_id must be a canonical UUIDv4";
    if (capability.kind === "operation" || o.status === "deprovisioned") {
      return "maintenance_id is not allowed on an operation_id URL or with deprovisioned";
    }
  }
  if (o.maintenance_admitted_at !== undefined) {
    if (o.maintenance_id === undefined) return "maintenance_admitted_at requires maintenance_id";
    if (typeof o.maintenance_admitted_at !== "string" || !RFC3339_UTC.test(o.maintenance_admitted_at)) {
      return "maintenance_admitted_at must be an RFC 3339 UTC timestamp ending in Z";
    }
  }
  return undefined;
}

/** providerd's reading of a callback body received on a URL carrying `capability`. */
export function parseCallbackBody(
  body: unknown,
  capability: Capability,
): { ok: true; callback: ParsedCallback } | { ok: false; problem: string } {
  const fields = parseWith(callbackBodySchema, body);
  if (!fields.ok) return fields;
  const o = fields.value;
  const problem = callbackProblem(o, capability);
  if (problem !== undefined) return { ok: false, problem };
  const callback: ParsedCallback = {
    capability,
    leaseUuid: o.lease_uuid,
    status: o.status,
    error: o.error ?? "",
    storageId: o.backend_storage_id,
    backendLabel: o.backend,
    retained: o.retained === true,
  };
  if (o.maintenance_id !== undefined) callback.maintenanceId = o.maintenance_id;
  if (o.maintenance_admitted_at !== undefined) callback.maintenanceAdmittedAt = o.maintenance_admitted_at;
  return { ok: true, callback };
}
