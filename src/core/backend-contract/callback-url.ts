import { FredError } from "../errors.ts";
import { isUuidV4 } from "../uuid.ts";

/**
 * The capability in a callback URL's query. providerd hands a backend one operation URL
 * carrying exactly one canonical v4 `operation_id`; the lifecycle URL is that same URL
 * with the pair renamed `lifecycle_id`, byte for byte, so the HMAC providerd checks
 * covers the same query. Both sides read the query with `capabilityParams`, so a URL the
 * backend accepts is one whose callbacks providerd will accept.
 */
export type CallbackUrls = { operationId: string; callbackUrl: string; lifecycleUrl: string };
export type Capability = { kind: "operation" | "lifecycle"; id: string };

export class CallbackUrlError extends FredError<"ERR_CALLBACK_URL"> {
  constructor(message: string) {
    super("ERR_CALLBACK_URL", message);
    this.name = "CallbackUrlError";
  }
}

const MAX_URL_LENGTH = 2048;
const KINDS = { operation_id: "operation", lifecycle_id: "lifecycle" } as const;
type CapabilityKey = keyof typeof KINDS;

/** The `operation_id` / `lifecycle_id` pairs of a raw query (without "?"), in order. */
function capabilityParams(rawQuery: string): { key: CapabilityKey; value: string; index: number }[] {
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
