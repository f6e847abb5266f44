/**
 * The form of a manifest that may be shown back: every service's `credentials.password`
 * replaced by a fixed mask. Release history and providerd's payload store keep this form,
 * so a registry password never outlives the lease that runs with it, nor reaches a tenant
 * read. The backend's journal holds the one unmasked copy; `keepStoredCredentials` puts it
 * back into a masked manifest sent again (a re-provision, or an update copied from
 * `/releases`).
 */

/** What a redacted password reads as. */
export const REDACTED_PASSWORD = "********";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Masks the password of one service object in place; true when there was one. */
function maskService(service: Record<string, unknown>): boolean {
  if (!isRecord(service.credentials)) return false;
  if (!("password" in service.credentials)) return false;
  service.credentials.password = REDACTED_PASSWORD;
  return true;
}

/** The service objects of a manifest document by name (the flat shape is one unnamed service). */
function servicesOf(document: Record<string, unknown>): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  if (isRecord(document.services)) {
    for (const [name, service] of Object.entries(document.services))
      if (isRecord(service)) out.set(name, service);
  } else {
    out.set("", document);
  }
  return out;
}

function parseObject(payload: Uint8Array): Record<string, unknown> | undefined {
  try {
    const document: unknown = JSON.parse(Buffer.from(payload).toString("utf8"));
    return isRecord(document) ? document : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `incoming` with each masked password replaced by the real one `stored` (the manifest the
 * backend already runs) holds for the same service, registry host and username. Anything
 * else stays as sent: a mask with nothing to match still reads as the mask (and the pull
 * fails unauthorized), so no password ever moves to another service, host or user.
 * Bytes with nothing to restore come back unchanged.
 */
export function keepStoredCredentials(incoming: Uint8Array, stored: Uint8Array | undefined): Uint8Array {
  if (stored === undefined) return incoming;
  const next = parseObject(incoming);
  const before = parseObject(stored);
  if (next === undefined || before === undefined) return incoming;
  const known = servicesOf(before);
  let restored = false;
  for (const [name, service] of servicesOf(next)) {
    const wanted = service.credentials;
    const held = known.get(name)?.credentials;
    if (!isRecord(wanted) || !isRecord(held) || wanted.password !== REDACTED_PASSWORD) continue;
    if (typeof held.password !== "string" || held.password === REDACTED_PASSWORD) continue;
    if (wanted.host !== held.host || wanted.username !== held.username) continue;
    wanted.password = held.password;
    restored = true;
  }
  return restored ? Buffer.from(JSON.stringify(next)) : incoming;
}

/**
 * `payload` with every password masked (stack `services.*` and the flat single-service
 * shape alike). Bytes without credentials come back unchanged; bytes that are not a JSON
 * object cannot have been admitted with credentials and come back unchanged too.
 */
export function redactManifestPayload(payload: Uint8Array): Uint8Array {
  const document = parseObject(payload);
  if (document === undefined) return payload;
  let masked = false;
  for (const service of servicesOf(document).values()) masked = maskService(service) || masked;
  return masked ? Buffer.from(JSON.stringify(document)) : payload;
}
