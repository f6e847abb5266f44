import { FredError } from "../../core/errors.ts";
import { isUuidV4 } from "../../core/uuid.ts";

/**
 * Callback URL rules. The operation URL must carry exactly one canonical v4
 * `operation_id`; the lifecycle URL is that same URL with `operation_id=<id>` replaced by
 * `lifecycle_id=<id>`, byte for byte, so the HMAC the provider checks covers the same query.
 */
export type CallbackUrls = { operationId: string; callbackUrl: string; lifecycleUrl: string };

export class CallbackUrlError extends FredError<"ERR_CALLBACK_URL"> {
  constructor(message: string) {
    super("ERR_CALLBACK_URL", message);
    this.name = "CallbackUrlError";
  }
}

const MAX_URL_LENGTH = 2048;

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
  const rawQuery = callbackUrl.includes("?") ? callbackUrl.slice(callbackUrl.indexOf("?") + 1) : "";
  const pairs = rawQuery === "" ? [] : rawQuery.split("&");
  const ops = pairs.filter((p) => p.startsWith("operation_id="));
  if (pairs.some((p) => p.startsWith("lifecycle_id="))) {
    throw new CallbackUrlError("callback_url must not carry lifecycle_id");
  }
  if (ops.length !== 1) throw new CallbackUrlError("callback_url must carry exactly one operation_id");
  const operationId = (ops[0] as string).slice("operation_id=".length);
  if (!isUuidV4(operationId)) {
    throw new CallbackUrlError("operation_id must be a canonical lowercase UUIDv4");
  }
  const base = callbackUrl.slice(0, callbackUrl.indexOf("?"));
  const derived = `${base}?${pairs.map((p) => (p === ops[0] ? `lifecycle_id=${operationId}` : p)).join("&")}`;
  if (lifecycleUrl !== undefined && lifecycleUrl !== null) {
    if (lifecycleUrl !== derived) {
      throw new CallbackUrlError(
        "lifecycle_callback_url must equal callback_url with operation_id renamed lifecycle_id",
      );
    }
  }
  return { operationId, callbackUrl, lifecycleUrl: derived };
}
