import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { hmacSecret } from "../auth/hmac.ts";
import { parseCallbackBody, parseCapability } from "../core/backend-contract/index.ts";
import { decodeBase64Std, parseStrictJson } from "../core/encoding.ts";
import { FredError } from "../core/errors.ts";
import { isCanonicalUuid } from "../core/uuid.ts";

/**
 * What `fred loadtest` reads before it sends anything: the fixtures file
 * `{"leases":[{"lease_uuid","payload"?}],"callbacks"?:[{"request_uri","body"}]}` (leases
 * the tenant key owns; callbacks recorded from a backend of the target deployment), the
 * tenant key file and the callback secret. Every problem is a usage error naming the
 * entry, so a bad file changes nothing on the target.
 */
export interface FixtureLease {
  uuid: string;
  /** The exact manifest bytes and their SHA-256 (the lease's meta_hash), when given. */
  payload?: { bytes: Buffer; metaHash: string };
}

export interface FixtureCallback {
  /** Origin-relative, exactly as the backend sent it (path and query). */
  uri: string;
  /** The exact JSON body bytes the backend sent. */
  body: Buffer;
}

export interface Fixtures {
  leases: FixtureLease[];
  callbacks: FixtureCallback[];
}

/** The callback route; the recorded URI may carry the provider's base path before it. */
const CALLBACK_SUFFIX = "/callbacks/provision";
const MAX_PAYLOAD_BYTES = 4 * 1024 * 1024;
const MAX_CALLBACK_BYTES = 64 * 1024;

const usage = (message: string) => new FredError("ERR_USAGE", message);

function record(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw usage(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

function list(doc: Record<string, unknown>, key: string, file: string): unknown[] {
  const value = doc[key];
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw usage(`${file}: ${key} must be an array`);
  return value;
}

function base64(value: unknown, what: string, max: number): Buffer {
  try {
    return decodeBase64Std(value as string, what, max);
  } catch (err) {
    throw usage((err as Error).message);
  }
}

function readLease(value: unknown, what: string): FixtureLease {
  const o = record(value, what);
  if (typeof o.lease_uuid !== "string" || !isCanonicalUuid(o.lease_uuid))
    throw usage(`${what}.lease_uuid must be a canonical lowercase UUID`);
  if (o.payload === undefined) return { uuid: o.lease_uuid };
  const bytes = base64(o.payload, `${what}.payload`, MAX_PAYLOAD_BYTES);
  if (bytes.length === 0) throw usage(`${what}.payload is empty`);
  return {
    uuid: o.lease_uuid,
    payload: { bytes, metaHash: createHash("sha256").update(bytes).digest("hex") },
  };
}

/** A recorded callback must still be one providerd would read: route, capability and typed body. */
function readCallback(value: unknown, what: string): FixtureCallback {
  const o = record(value, what);
  const uri = o.request_uri;
  if (typeof uri !== "string" || !uri.startsWith("/") || uri.startsWith("//"))
    throw usage(
      `${what}.request_uri must be an origin-relative URI such as /callbacks/provision?operation_id=…`,
    );
  const q = uri.indexOf("?");
  if (q < 0 || !uri.slice(0, q).endsWith(CALLBACK_SUFFIX))
    throw usage(`${what}.request_uri must be a ${CALLBACK_SUFFIX}?… URI`);
  const capability = parseCapability(uri.slice(q + 1));
  if ("ok" in capability) throw usage(`${what}.request_uri: ${capability.problem}`);
  const body = base64(o.body, `${what}.body`, MAX_CALLBACK_BYTES);
  let json: unknown;
  try {
    json = parseStrictJson(body, MAX_CALLBACK_BYTES);
  } catch {
    throw usage(`${what}.body is not one strict JSON object`);
  }
  const parsed = parseCallbackBody(json, capability);
  if (!parsed.ok) throw usage(`${what}.body is not a current callback: ${parsed.problem}`);
  return { uri, body };
}

export function readFixtures(file: string): Fixtures {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw usage(`cannot read --fixtures ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw usage(`${file} is not JSON`);
  }
  const doc = record(parsed, file);
  const leases = list(doc, "leases", file).map((l, i) => readLease(l, `leases[${i}]`));
  const callbacks = list(doc, "callbacks", file).map((c, i) => readCallback(c, `callbacks[${i}]`));
  const seen = new Set(leases.map((l) => l.uuid));
  if (seen.size !== leases.length) throw usage(`${file}: a lease_uuid appears twice`);
  return { leases, callbacks };
}

/** The tenant's secp256k1 key: exactly 64 hex digits in a file only its owner can read. */
export function readTenantKey(file: string): Uint8Array {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (err) {
    throw usage(`cannot read --tenant-key-file ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  if ((mode & 0o077) !== 0) throw usage(`${file} must be mode 0600`);
  const hex = readFileSync(file, "utf8").trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw usage(`${file} must hold exactly 64 hex digits`);
  return Buffer.from(hex, "hex");
}

/** The recorded callbacks' backend secret, held to the rule providerd holds it to. */
export function callbackSecret(text: string): Buffer {
  try {
    return hmacSecret(text);
  } catch {
    throw usage("--callback-secret must be the backend's HMAC secret, at least 32 bytes");
  }
}
