import assert from "node:assert/strict";
import {
  type Manifest,
  type ParseManifestOptions,
  type Problem,
  parseManifest,
} from "../../../src/core/manifest/index.ts";

/** Parses a document given as a value (serialised here) or as raw text. */
export function parse(doc: unknown, options?: ParseManifestOptions) {
  return parseManifest(
    typeof doc === "string" || doc instanceof Uint8Array ? doc : JSON.stringify(doc),
    options,
  );
}

export function expectValid(doc: unknown, options?: ParseManifestOptions): Manifest {
  const result = parse(doc, options);
  assert.ok(result.ok, `expected a valid manifest, got ${JSON.stringify(result.ok ? [] : result.problems)}`);
  return result.manifest;
}

export function problemsOf(doc: unknown, options?: ParseManifestOptions): Problem[] {
  const result = parse(doc, options);
  assert.ok(!result.ok, `expected problems for ${typeof doc === "string" ? doc : JSON.stringify(doc)}`);
  return result.problems;
}

/** Asserts that one of the problems sits at `path` and its message matches `message`. */
export function expectProblem(
  doc: unknown,
  path: string,
  message: RegExp,
  options?: ParseManifestOptions,
): Problem[] {
  const problems = problemsOf(doc, options);
  assert.ok(
    problems.some((p) => p.path === path && message.test(p.message)),
    `expected a problem at ${JSON.stringify(path)} matching ${message}, got ${JSON.stringify(problems)}`,
  );
  return problems;
}

/** A flat manifest with one field set. */
export function flat(fields: Record<string, unknown>): Record<string, unknown> {
  return { image: "nginx:1.27", ...fields };
}

/** `count` entries named by `name(i)` with value `value`. */
export function entries(count: number, name: (i: number) => string, value: unknown): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [name(i), value]));
}
