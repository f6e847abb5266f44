import type { z } from "zod";
import { MANIFEST_LIMITS } from "./limits.ts";

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
