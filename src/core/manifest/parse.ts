import type { z } from "zod";
import { parseStrictJson } from "../encoding.ts";
import { isFredError } from "../errors.ts";
import { DEFAULT_SERVICE_NAME, MANIFEST_LIMITS } from "./limits.ts";
import type { ServiceSpec } from "./schema.ts";
import { flatManifestSchema, stackManifestSchema } from "./schema.ts";

/**
 * A validated manifest in the one internal shape every consumer sees: a map of services.
 * A flat document arrives here as the single service "app". Durations are nanoseconds.
 */
export interface Manifest {
  /** Which shape the document was written in; "flat" is deprecated but still accepted. */
  format: "flat" | "stack";
  services: Record<string, ServiceSpec>;
}

export interface ParseManifestOptions {
  /** Refuse documents larger than this before parsing anything (default 1 MiB). */
  maxBytes?: number;
  /**
   * Accept `host_port` > 0. Deploy-time admission refuses fixed host ports, so this is
   * off by default; set it only to read back documents that were stored earlier.
   */
  allowFixedHostPort?: boolean;
  /** Longest problem list returned (default 100); the rest are counted in a final line. */
  maxProblems?: number;
}

export type ParseManifestResult = { ok: true; manifest: Manifest } | { ok: false; problems: Problem[] };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function jsonProblem(err: unknown, maxBytes: number): Problem {
  if (isFredError(err, "ERR_JSON_TOO_LARGE"))
    return { path: "", message: `manifest is larger than ${maxBytes} bytes` };
  if (isFredError(err)) return { path: "", message: err.message };
  throw err;
}

/**
 * A "__proto__" key survives JSON.parse as an own property but vanishes (or worse,
 * re-parents the object) when copied into a plain object, so it is refused outright.
 */
function protoKeyProblems(document: unknown): Problem[] {
  const out: Problem[] = [];
  // An explicit stack, not recursion: a 1 MiB document can nest 500k levels deep.
  // Pointers are built by appending (cheap string ropes), never by copying path arrays.
  const pending: { value: unknown; pointer: string }[] = [{ value: document, pointer: "" }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, pointer } = next;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) pending.push({ value: value[i], pointer: `${pointer}/${i}` });
    } else if (isRecord(value)) {
      for (const [key, child] of Object.entries(value)) {
        const childPointer = `${pointer}/${escapePointerToken(key)}`;
        if (key === "__proto__")
          out.push({ path: childPointer, message: 'the key "__proto__" is not allowed' });
        else pending.push({ value: child, pointer: childPointer });
      }
    }
  }
  return out;
}

/**
 * Deploy-time admission rules that stored documents may predate. Read from the raw
 * document so they are reported together with the schema's problems.
 */
function admissionProblems(document: Record<string, unknown>, isStack: boolean): Problem[] {
  const out: Problem[] = [];
  const services: [string[], unknown][] = isStack
    ? Object.entries(isRecord(document["services"]) ? document["services"] : {}).map(([n, s]) => [
        ["services", n],
        s,
      ])
    : [[[], document]];
  for (const [base, service] of services) {
    const ports = isRecord(service) && isRecord(service["ports"]) ? service["ports"] : {};
    for (const [key, port] of Object.entries(ports)) {
      const hostPort = isRecord(port) ? port["host_port"] : undefined;
      if (typeof hostPort === "number" && Number.isInteger(hostPort) && hostPort > 0 && hostPort <= 65535) {
        out.push({
          path: toPointer([...base, "ports", key, "host_port"]),
          message: "a fixed host_port is not permitted; leave it out (ports are assigned)",
        });
      }
    }
  }
  return out;
}

/**
 * Parses and validates a tenant manifest (fred-wire §3), returning every problem found
 * rather than stopping at the first. Never throws for bad input.
 */
export function parseManifest(
  input: Uint8Array | string,
  options: ParseManifestOptions = {},
): ParseManifestResult {
  const maxBytes = options.maxBytes ?? MANIFEST_LIMITS.maxBytes;
  const fail = (problems: Problem[]): ParseManifestResult => ({
    ok: false,
    problems: capProblems(problems, options.maxProblems),
  });

  const size = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (size === 0) return fail([{ path: "", message: "manifest is empty" }]);
  let document: unknown;
  try {
    document = parseStrictJson(input, maxBytes);
  } catch (err) {
    return fail([jsonProblem(err, maxBytes)]);
  }
  if (!isRecord(document)) return fail([{ path: "", message: "manifest must be a JSON object" }]);

  const problems = protoKeyProblems(document);
  if (problems.length > 0) return fail(problems);

  // Same probe as the Go reference: an own top-level "services" key means the stack shape.
  const isStack = Object.hasOwn(document, "services");
  const result = isStack
    ? stackManifestSchema.safeParse(document, { error: problemWording })
    : flatManifestSchema.safeParse(document, { error: problemWording });
  if (!result.success) problems.push(...problemsFromIssues(result.error.issues));
  if (!options.allowFixedHostPort) problems.push(...admissionProblems(document, isStack));
  if (!result.success || problems.length > 0) return fail(problems);

  let manifest: Manifest;
  if ("services" in result.data) {
    manifest = { format: "stack", services: result.data.services };
  } else {
    const { depends_on: _emptyDependsOn, ...service } = result.data;
    manifest = { format: "flat", services: { [DEFAULT_SERVICE_NAME]: service } };
  }
  return { ok: true, manifest };
}

// Problems: what the parse reports, each at its JSON pointer.

/** One thing wrong with a document: where (RFC 6901 JSON pointer) and what. */
export interface Problem {
  /** JSON pointer into the document that was checked; "" is the whole document. */
  path: string;
  message: string;
  /**
   * Set to "items" when `path` points into a lease-items array rather than the manifest
   * (only lease-items checks produce these; absent means the manifest).
   */
  document?: "items";
}

/** Escapes one reference token: "~" → "~0", then "/" → "~1" (so "80/tcp" → "80~1tcp"). */
export function escapePointerToken(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}

export function toPointer(path: readonly PropertyKey[]): string {
  return path.map((token) => `/${escapePointerToken(String(token))}`).join("");
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return "a string";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a fractional number";
  return `a ${typeof value}`;
}

const EXPECTED: Record<string, string> = {
  object: "an object",
  record: "an object",
  array: "an array",
  string: "a string",
  boolean: "true or false",
  number: "a number",
  int: "an integer",
};

/**
 * Wording for zod's built-in issues (our own rules carry their own messages). Passed as
 * the per-parse error map, so schema-level messages still win.
 */
export const problemWording: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === "invalid_type") {
    if (issue.input === undefined) return "required field is missing";
    const expected = EXPECTED[issue.expected] ?? issue.expected;
    return `must be ${expected}, not ${describeValue(issue.input)}`;
  }
  return undefined;
};

/**
 * Flattens zod issues into problems: one problem per unknown key (at that key's own
 * pointer), the inner message for a bad record key, and the issue message otherwise.
 */
export function problemsFromIssues(
  issues: readonly z.core.$ZodIssue[],
  base: readonly PropertyKey[] = [],
): Problem[] {
  const out: Problem[] = [];
  for (const issue of issues) {
    const path = [...base, ...issue.path];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys)
        out.push({ path: toPointer([...path, key]), message: `unknown field ${JSON.stringify(key)}` });
    } else if (issue.code === "invalid_key") {
      const messages = issue.issues.length > 0 ? issue.issues.map((inner) => inner.message) : [issue.message];
      for (const message of messages) out.push({ path: toPointer(path), message });
    } else {
      out.push({ path: toPointer(path), message: issue.message });
    }
  }
  return out;
}

/** Keeps answers bounded: a 1 MiB document could otherwise yield tens of thousands. */
export function capProblems(problems: Problem[], max: number = MANIFEST_LIMITS.maxProblems): Problem[] {
  if (problems.length <= max) return problems;
  const kept = problems.slice(0, max);
  kept.push({ path: "", message: `${problems.length - max} more problems not listed` });
  return kept;
}
