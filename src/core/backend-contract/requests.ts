import { createHash } from "node:crypto";
import { z } from "zod";
import { decodeBase64Std, decodeHex } from "../encoding.ts";
import { FredError, isFredError } from "../errors.ts";
import { DEFAULT_SERVICE_NAME } from "../manifest/index.ts";
import { isCanonicalUuid, isUuidV4, NIL_UUID } from "../uuid.ts";

/**
 * The requests of the backend contract, as both sides see them, in four parts: the HTTP
 * surface (header names, routes, query parameters, size limits), the building blocks every
 * contract schema is made of, the callback URLs a provision carries, and the request
 * bodies providerd sends and a backend reads.
 */

// The HTTP surface. The kit registers its routes with these builders and providerd's
// client calls the same builders, so a path exists once.

/** Every backend response carries exactly one of these (the storage identity). */
export const STORAGE_HEADER = "x-fred-backend-storage-id";
/** `t=<unix seconds>,sha256=<hex>` on every signed request and every callback. */
export const SIGNATURE_HEADER = "x-fred-signature";

/** The mutating POSTs, served at `/{op}` and at `/_fred/storage/{storage-id}/{op}`. */
export const MUTATIONS = [
  "provision",
  "deprovision",
  "reconcile_custom_domain",
  "restart",
  "update",
  "restore",
] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** The one status that means a backend took a mutation; any other answer is classified. */
export const MUTATION_ACCEPTED: Record<Mutation, number> = {
  provision: 202,
  deprovision: 200,
  reconcile_custom_domain: 204,
  restart: 202,
  update: 202,
  restore: 202,
};

/** `/{op}`, or the storage-pinned `/_fred/storage/{storageId}/{op}` (pass ":storageId" for a route). */
export function mutationPath(op: Mutation, storageId?: string): string {
  return storageId === undefined ? `/${op}` : `/_fred/storage/${storageId}/${op}`;
}

/** Per-lease reads: `/{read}/{uuid}` (pass ":uuid" for a route). */
export type LeaseRead = "info" | "provisions" | "releases" | "logs" | "usage";
export function leasePath(read: LeaseRead, leaseUuid: string): string {
  return `/${read}/${leaseUuid}`;
}

/**
 * A shell session in a lease's instance: `GET /shell/{uuid}?service=&instance=&tty=&command=`
 * (command repeated, one argv entry each), signed like every GET and upgraded to a
 * WebSocket speaking src/core/exec-channel.ts's framing.
 */
export function execPath(leaseUuid: string): string {
  return `/shell/${leaseUuid}`;
}

export const PATHS = {
  health: "/health",
  stats: "/stats",
  metrics: "/metrics",
  /** Inventory: `?limit=&continue=` pages, or repeated `?lease_uuid=` filters. */
  provisions: "/provisions",
  retentions: "/retentions",
  /** Every sampled lease's current usage: `?limit=&continue=` pages (see usage.ts). */
  usage: "/usage",
} as const;

/** Served without a signature (verifying there is optional for a backend). */
export const UNAUTHENTICATED_PATHS: ReadonlySet<string> = new Set([PATHS.health, PATHS.stats, PATHS.metrics]);

/** Query parameters. `backend_storage_id` rides on every request once the identity is pinned. */
export const QUERY = {
  storageId: "backend_storage_id",
  limit: "limit",
  continue: "continue",
  leaseUuid: "lease_uuid",
  tail: "tail",
  /** `GET /logs/{uuid}?follow=true`: the streaming log read (log-stream.ts). */
  follow: "follow",
} as const;

const MiB = 1024 * 1024;

export const LIMITS = {
  /** Largest page a backend serves; larger `limit`s are lowered to it. */
  maxPage: 5000,
  /** The page size providerd asks for. */
  inventoryPage: 1000,
  /** `lease_uuid` filters providerd sends in one lookup. */
  leaseFilters: 100,
  defaultTail: 100,
  maxTail: 10_000,
  /** Decoded payload (manifest) bytes. */
  payloadBytes: MiB,
} as const;

/**
 * Building blocks of the contract's schemas. Readers report the first problem only, in
 * the order the fields are declared, with a message that names the field as the caller
 * wrote it (`items[0].sku`), so the schemas below list fields in the order they are checked.
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** `items[0].sku` for the zod path ["items", 0, "sku"]. */
function fieldName(path: readonly PropertyKey[]): string {
  let out = "";
  for (const token of path)
    out += typeof token === "number" ? `[${token}]` : `${out === "" ? "" : "."}${String(token)}`;
  return out;
}

/** Runs `schema` and keeps its first problem's message. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown): Parsed<z.output<S>> {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problem: result.error.issues[0]?.message ?? "invalid input" };
}

/** A problem message that names the field: `${field} ${text}`. */
export const at = (text: string) => (issue: { path?: PropertyKey[] | undefined }) =>
  `${fieldName(issue.path ?? [])} ${text}`;

/** A canonical lowercase UUID of any version (lease, SKU and provider UUIDs come from the chain). */
export const canonicalUuid = (text = "must be a canonical lowercase UUID") =>
  z.custom<string>(isCanonicalUuid, { error: at(text) });

/** A lease-like UUID that says "is required" when absent, null or empty. */
const requiredUuid = () =>
  z.custom<string>(isCanonicalUuid, {
    error: (issue) =>
      issue.input === undefined || issue.input === null || issue.input === ""
        ? at("is required")(issue)
        : at("must be a canonical lowercase UUID")(issue),
  });

/** A lease UUID: required, canonical lowercase, and never the nil UUID (no chain mints it). */
const requiredLeaseUuid = () =>
  z.custom<string>((v) => isCanonicalUuid(v) && v !== NIL_UUID, {
    error: (issue) => {
      if (issue.input === undefined || issue.input === null || issue.input === "")
        return at("is required")(issue);
      if (issue.input === NIL_UUID) return at("must not be the nil UUID")(issue);
      return at("must be a canonical lowercase UUID")(issue);
    },
  });

/**
 * A field typed for whoever builds the body but not checked on its own: either a rule of
 * the enclosing schema checks it (so its problem comes in rule order), or readers relay it
 * without judging it.
 */
export const typedOnly = <T>() => z.custom<T>(() => true).optional();

/**
 * The capability in a callback URL's query. providerd hands a backend one operation URL
 * carrying exactly one canonical v4 `operation_id`; the lifecycle URL is that same URL
 * with the pair renamed `lifecycle_id`, byte for byte, so the HMAC providerd checks
 * covers the same query. Both sides read the query with `capabilityParams` (providerd in
 * callback.ts's `parseCapability`), so a URL the backend accepts is one whose callbacks
 * providerd will accept.
 */
export type CallbackUrls = { operationId: string; callbackUrl: string; lifecycleUrl: string };

export class CallbackUrlError extends FredError<"ERR_CALLBACK_URL"> {
  constructor(message: string) {
    super("ERR_CALLBACK_URL", message);
    this.name = "CallbackUrlError";
  }
}

const MAX_URL_LENGTH = 2048;
export type CapabilityKey = "operation_id" | "lifecycle_id";

/** The `operation_id` / `lifecycle_id` pairs of a raw query (without "?"), in order. */
export function capabilityParams(rawQuery: string): { key: CapabilityKey; value: string; index: number }[] {
  const found: { key: CapabilityKey; value: string; index: number }[] = [];
  for (const [index, part] of (rawQuery === "" ? [] : rawQuery.split("&")).entries()) {
    const eq = part.indexOf("=");
    const key = eq < 0 ? part : part.slice(0, eq);
    if (key === "operation_id" || key === "lifecycle_id") {
      found.push({ key, value: eq < 0 ? "" : part.slice(eq + 1), index });
    }
  }
  return found;
}

/**
 * A backend's reading of a provision's `callback_url` (+ optional `lifecycle_callback_url`):
 * the operation id and both URLs, or a `CallbackUrlError` with a message for the caller.
 */
export function resolveCallbackUrls(callbackUrl: unknown, lifecycleUrl: unknown): CallbackUrls {
  if (typeof callbackUrl !== "string" || callbackUrl === "")
    throw new CallbackUrlError("callback_url is required");
  if (callbackUrl.length > MAX_URL_LENGTH) throw new CallbackUrlError("callback_url is too long");
  let url: URL;
  try {
    url = new URL(callbackUrl);
  } catch {
    throw new CallbackUrlError("callback_url is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CallbackUrlError("callback_url must use http or https");
  }
  if (url.username !== "" || url.password !== "" || url.hash !== "") {
    throw new CallbackUrlError("callback_url must not carry credentials or a fragment");
  }
  const q = callbackUrl.indexOf("?");
  const pairs = q < 0 ? [] : callbackUrl.slice(q + 1).split("&");
  const found = capabilityParams(q < 0 ? "" : callbackUrl.slice(q + 1));
  if (found.some((p) => p.key === "lifecycle_id")) {
    throw new CallbackUrlError("callback_url must not carry lifecycle_id");
  }
  const op = found[0];
  if (op === undefined || found.length !== 1) {
    throw new CallbackUrlError("callback_url must carry exactly one operation_id");
  }
  if (!isUuidV4(op.value)) throw new CallbackUrlError("operation_id must be a canonical lowercase UUIDv4");
  pairs[op.index] = `lifecycle_id=${op.value}`;
  const derived = `${callbackUrl.slice(0, q)}?${pairs.join("&")}`;
  if (lifecycleUrl !== undefined && lifecycleUrl !== null && lifecycleUrl !== derived) {
    throw new CallbackUrlError(
      "lifecycle_callback_url must equal callback_url with operation_id renamed lifecycle_id",
    );
  }
  return { operationId: op.value, callbackUrl, lifecycleUrl: derived };
}

/**
 * Request bodies providerd sends and a backend reads. The schemas are the backend's
 * reader (first problem wins, unknown keys ignored, as the reference does); their input
 * types are what providerd's client builds. A single unnamed item deploys service "app".
 */
export const DEFAULT_SERVICE = DEFAULT_SERVICE_NAME;
const SERVICE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_ITEMS = 64;
const MAX_QUANTITY = 1000;
const MAX_TENANT_LENGTH = 256;
const MAX_DOMAIN_LENGTH = 253;

/** A lease item on the backend wire (the chain calls the SKU field `sku_uuid`). */
export interface WireLeaseItem {
  sku: string;
  quantity: number;
  service_name?: string;
  custom_domain?: string;
}

/** Absent or "" means none; anything else must be a string passing `ok`. */
const optionalText = (ok: (v: string) => boolean, text: string) =>
  z
    .string({ error: at(text) })
    .refine((v) => v === "" || ok(v), { error: at(text) })
    .optional();

const quantityText = `must be an integer from 1 to ${MAX_QUANTITY}`;
const leaseItem = z
  .object(
    {
      sku: canonicalUuid(),
      quantity: z
        .int({ error: at(quantityText) })
        .min(1, { error: at(quantityText) })
        .max(MAX_QUANTITY, { error: at(quantityText) }),
      service_name: optionalText((v) => SERVICE_NAME.test(v), "must be a lowercase DNS label"),
      custom_domain: optionalText((v) => v.length <= MAX_DOMAIN_LENGTH, "must be a domain name"),
    },
    { error: at("must be an object") },
  )
  .transform((o): WireLeaseItem => {
    const item: WireLeaseItem = { sku: o.sku, quantity: o.quantity };
    if (o.service_name) item.service_name = o.service_name;
    if (o.custom_domain) item.custom_domain = o.custom_domain;
    return item;
  });

/** Either one unnamed item (service "app") or every item named, names unique. */
function namingProblem(items: readonly WireLeaseItem[]): string | undefined {
  const named = items.filter((it) => it.service_name !== undefined).length;
  if (named !== 0 && named !== items.length) return "items must be all named or a single unnamed item";
  if (named === 0 && items.length > 1) return "only a single item may omit service_name";
  const names = new Set(items.map((it) => it.service_name ?? DEFAULT_SERVICE));
  if (names.size !== items.length) return "items must not repeat a service_name";
  return undefined;
}

export const leaseItemsSchema = z
  .array(leaseItem, { error: "items must be a non-empty array" })
  .min(1, { error: "items must be a non-empty array" })
  .max(MAX_ITEMS, { error: `items may hold at most ${MAX_ITEMS} entries` })
  .superRefine((items, ctx) => {
    const problem = namingProblem(items);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: items });
  });

const body = { error: "request body must be a JSON object" };

/** Turns a caller-safe FredError thrown by a reader into the schema's first problem. */
function asIssue<T>(ctx: z.RefinementCtx, input: unknown, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!isFredError(err)) throw err;
    ctx.addIssue({ code: "custom", message: err.message, input });
    return z.NEVER;
  }
}

/** What a backend admits: the checked request, with the payload decoded and hashed. */
export interface ProvisionRequest extends CallbackUrls {
  leaseUuid: string;
  tenant: string;
  providerUuid: string;
  items: WireLeaseItem[];
  payload: Buffer | undefined;
  /** sha256 hex of the payload (computed when the caller sent none). */
  payloadHash: string | undefined;
}

export const provisionRequestSchema = z
  .object(
    {
      lease_uuid: requiredLeaseUuid(),
      tenant: z
        .string({ error: "tenant is required" })
        .min(1, { error: "tenant is required" })
        .max(MAX_TENANT_LENGTH, { error: "tenant is required" }),
      provider_uuid: requiredUuid(),
      items: leaseItemsSchema,
      // The URL rules and the payload rules run in that order after the fields above.
      callback_url: typedOnly<string>(),
      lifecycle_callback_url: typedOnly<string | null>(),
      /** Standard padded base64 of the manifest. */
      payload: typedOnly<string>(),
      /** Hex SHA-256 of the decoded payload. */
      payload_hash: typedOnly<string>(),
    },
    body,
  )
  .transform(
    (o, ctx): ProvisionRequest =>
      // The URL rules, the decoders and readPayload refuse with caller-safe FredErrors.
      asIssue(ctx, o, () => {
        const urls = resolveCallbackUrls(o.callback_url, o.lifecycle_callback_url);
        const { payload, payloadHash } = readPayload(o.payload, o.payload_hash);
        return {
          leaseUuid: o.lease_uuid,
          tenant: o.tenant,
          providerUuid: o.provider_uuid,
          items: o.items,
          ...urls,
          payload,
          payloadHash,
        };
      }),
  );

function readPayload(raw: unknown, rawHash: unknown): Pick<ProvisionRequest, "payload" | "payloadHash"> {
  const refuse = (message: string) => new FredError("ERR_WIRE", message);
  const hashSent = rawHash !== undefined && rawHash !== "";
  if (raw === undefined || raw === null || raw === "") {
    if (hashSent) throw refuse("payload_hash requires payload");
    return { payload: undefined, payloadHash: undefined };
  }
  const payload = decodeBase64Std(raw as string, "payload", LIMITS.payloadBytes);
  if (payload.length > LIMITS.payloadBytes) throw refuse("payload is too large");
  const payloadHash = createHash("sha256").update(payload).digest("hex");
  if (hashSent && decodeHex(rawHash as string, "payload_hash", 32).toString("hex") !== payloadHash) {
    throw refuse("payload_hash does not match payload");
  }
  return { payload, payloadHash };
}

export const deprovisionRequestSchema = z.object({ lease_uuid: requiredLeaseUuid() }, body);

export const reconcileCustomDomainRequestSchema = z.object(
  { lease_uuid: requiredLeaseUuid(), items: leaseItemsSchema },
  body,
);

/**
 * A restart or update as a backend admits it. `admittedAt` is providerd's admission
 * stamp exactly as sent (echoed back on the completion callback); `admittedKey` is the
 * same instant in a fixed-width form that sorts by time. Both are undefined for an
 * unstamped command (an older providerd).
 */
export interface MaintenanceRequest {
  kind: "restart" | "update";
  leaseUuid: string;
  maintenanceId: string;
  callbackUrl: string;
  admittedAt: string | undefined;
  admittedKey: string | undefined;
  /** update only: the new manifest, decoded, and its sha256 hex. */
  payload: Buffer | undefined;
  payloadHash: string | undefined;
}

const RFC3339_UTC = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/**
 * An RFC 3339 UTC timestamp (`Z`, up to nanoseconds) as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`,
 * which orders lexicographically by instant; undefined when the text is not one (a
 * `+00:00` offset included) or names no real date.
 */
export function admittedAtKey(text: string): string | undefined {
  const m = RFC3339_UTC.exec(text);
  if (m === null) return undefined;
  const [, date, hh, mm, ss, frac] = m as unknown as [string, string, string, string, string, string?];
  const ms = Date.parse(`${date}T${hh}:${mm}:${ss}Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== `${date}T${hh}:${mm}:${ss}`) {
    return undefined;
  }
  return `${date}T${hh}:${mm}:${ss}.${(frac ?? "").padEnd(9, "0")}Z`;
}

const maintenanceFields = {
  lease_uuid: requiredLeaseUuid(),
  // Checked in this order by readMaintenance, after lease_uuid.
  /** The command's idempotency key, a canonical UUIDv4 providerd mints. */
  maintenance_id: typedOnly<string>(),
  /** The lease's lifecycle callback URL (the completion goes there). */
  callback_url: typedOnly<string>(),
  /** providerd's admission time, RFC 3339 UTC; the same value on every replay. */
  admitted_at: typedOnly<string>(),
};

function readMaintenance(
  kind: MaintenanceRequest["kind"],
  o: { lease_uuid: string; maintenance_id?: unknown; callback_url?: unknown; admitted_at?: unknown },
): MaintenanceRequest {
  const refuse = (message: string) => new FredError("ERR_WIRE", message);
  const id = o.maintenance_id;
  if (id === undefined || id === null || id === "") throw refuse("maintenance_id is required");
  if (!isUuidV4(id)) throw refuse("maintenance_id must be a canonical lowercase UUIDv4");
  const url = o.callback_url;
  if (typeof url !== "string" || url === "") throw refuse("callback_url is required");
  if (url.length > 2048) throw refuse("callback_url is too long");
  let admittedAt: string | undefined;
  let admittedKey: string | undefined;
  if (o.admitted_at !== undefined && o.admitted_at !== null && o.admitted_at !== "") {
    admittedKey = typeof o.admitted_at === "string" ? admittedAtKey(o.admitted_at) : undefined;
    if (admittedKey === undefined) throw refuse("admitted_at must be an RFC 3339 UTC timestamp ending in Z");
    admittedAt = o.admitted_at as string;
  }
  return {
    kind,
    leaseUuid: o.lease_uuid,
    maintenanceId: id,
    callbackUrl: url,
    admittedAt,
    admittedKey,
    payload: undefined,
    payloadHash: undefined,
  };
}

export const restartRequestSchema = z
  .object(maintenanceFields, body)
  .transform((o, ctx) => asIssue(ctx, o, () => readMaintenance("restart", o)));

export const updateRequestSchema = z
  .object(
    {
      ...maintenanceFields,
      /** Standard padded base64 of the new manifest. */
      payload: typedOnly<string>(),
      /** Optional hex SHA-256 of the decoded payload. */
      payload_hash: typedOnly<string>(),
    },
    body,
  )
  .transform((o, ctx) =>
    asIssue(ctx, o, () => {
      const req = readMaintenance("update", o);
      if (o.payload === undefined || o.payload === null || o.payload === "") {
        throw new FredError("ERR_WIRE", "payload is required");
      }
      return { ...req, ...readPayload(o.payload, o.payload_hash) };
    }),
  );

export const restoreRequestSchema = z.object(
  {
    lease_uuid: requiredLeaseUuid(),
    from_lease_uuid: requiredLeaseUuid(),
    tenant: z.string(),
    provider_uuid: requiredUuid(),
    items: leaseItemsSchema,
    callback_url: z.string(),
    lifecycle_callback_url: z.string(),
  },
  body,
);

/** What each mutation sends (the input side of its schema). */
export interface MutationBodies {
  provision: z.input<typeof provisionRequestSchema>;
  deprovision: z.input<typeof deprovisionRequestSchema>;
  reconcile_custom_domain: z.input<typeof reconcileCustomDomainRequestSchema>;
  restart: z.input<typeof restartRequestSchema>;
  update: z.input<typeof updateRequestSchema>;
  restore: z.input<typeof restoreRequestSchema>;
}
