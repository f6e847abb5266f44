/**
 * The form of a manifest that may be shown back: every service's `credentials.password`
 * replaced by a fixed mask. Release history keeps and serves this form, so a registry
 * password never outlives the lease that runs with it, nor reaches a tenant read.
 */

/** What a redacted password reads as. */
export const REDACTED_PASSWORD = "********";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Masks the password of one service object in place; true when there was one. */
function maskService(service: unknown): boolean {
  if (!isRecord(service) || !isRecord(service.credentials)) return false;
  if (!("password" in service.credentials)) return false;
  service.credentials.password = REDACTED_PASSWORD;
  return true;
}

/**
 * `payload` with every password masked (stack `services.*` and the flat single-service
 * shape alike). Bytes without credentials come back unchanged; bytes that are not a JSON
 * object cannot have been admitted with credentials and come back unchanged too.
 */
export function redactManifestPayload(payload: Uint8Array): Uint8Array {
  let document: unknown;
  try {
    document = JSON.parse(Buffer.from(payload).toString("utf8"));
  } catch {
    return payload;
  }
  if (!isRecord(document)) return payload;
  let masked = maskService(document);
  if (isRecord(document.services)) {
    for (const service of Object.values(document.services)) masked = maskService(service) || masked;
  }
  return masked ? Buffer.from(JSON.stringify(document)) : payload;
}
