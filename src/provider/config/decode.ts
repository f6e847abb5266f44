import { isDeepStrictEqual } from "node:util";
import { isMap, isScalar, isSeq, type Node, parseAllDocuments } from "yaml";
import { parseConfigDuration } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { durationProblem } from "./fields.ts";
import { type FieldInfo, type FieldKind, fieldsOf } from "./introspect.ts";
import type { RefusedKeys } from "./refused.ts";
import { fileFields } from "./schema.ts";

/**
 * What the schema parses: the YAML text (exactly one document, no key colliding with
 * another case-insensitively) with `PROVIDER_<KEY>` overrides laid over it and refused
 * keys taken out. Every problem is collected rather than thrown, so `--check-config` can
 * print all of them at once.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export interface ConfigInput {
  /** undefined when the text is not one YAML mapping (nothing else can be checked). */
  input: Record<string, unknown> | undefined;
  problems: string[];
}

/** The environment variable that overrides `key`. */
export function envName(key: string): string {
  return `PROVIDER_${key.toUpperCase()}`;
}

export function decodeConfig(text: string, env: Env, refused: RefusedKeys): ConfigInput {
  const problems: string[] = [];
  const root = readYamlRoot(text, problems);
  if (root === undefined) return { input: undefined, problems };
  const input = { ...root };
  if (env[envName("backends")] !== undefined) {
    problems.push(`${envName("backends")} cannot set backends; list them in the config file`);
  }
  for (const [key, field] of fieldsOf(fileFields)) {
    if (key === "backends") continue;
    const refusal = refused[key];
    const fromEnv = env[envName(key)];
    if (refusal !== undefined && !refusal.atDefault) {
      if (key in root) problems.push(`${key}: ${refusal.reason}`);
      if (fromEnv !== undefined) problems.push(`${key} (from ${envName(key)}): ${refusal.reason}`);
      delete input[key];
      continue;
    }
    if (fromEnv !== undefined) overlay(input, key, field, fromEnv, key in root, problems);
    if (refusal !== undefined && key in input) {
      if (!isDeepStrictEqual(input[key], field.default)) {
        const source = fromEnv === undefined ? key : `${key} (from ${envName(key)})`;
        problems.push(
          `${source}: only the default ${JSON.stringify(field.default)} is accepted; ${refusal.reason}`,
        );
      }
      delete input[key];
    }
  }
  return { input, problems };
}

/**
 * `PROVIDER_<KEY>` overrides a key only when it has a built-in default or the file sets
 * it: providerd must never start from the environment alone.
 */
function overlay(
  input: Record<string, unknown>,
  key: string,
  field: FieldInfo,
  text: string,
  inFile: boolean,
  problems: string[],
): void {
  const name = envName(key);
  if (!field.hasDefault && !inFile) {
    problems.push(
      `${name} is set but ${key} is not in the config file; keys without a default must appear in the file`,
    );
    return;
  }
  const decoded = decodeEnvText(field.kind, text);
  if (decoded.ok) input[key] = decoded.value;
  else problems.push(`${name} ${decoded.problem}`);
}

type Decoded = { ok: true; value: unknown } | { ok: false; problem: string };

/** Env text → the value the file would hold (a duration stays text; the schema converts it). */
function decodeEnvText(kind: FieldKind, text: string): Decoded {
  switch (kind) {
    case "bool":
      return text === "true" || text === "false"
        ? { ok: true, value: text === "true" }
        : { ok: false, problem: "must be true or false" };
    case "int":
      return /^-?\d+$/.test(text) && Number.isSafeInteger(Number(text))
        ? { ok: true, value: Number(text) }
        : { ok: false, problem: "must be an integer" };
    case "number":
      return text.trim() !== "" && Number.isFinite(Number(text))
        ? { ok: true, value: Number(text) }
        : { ok: false, problem: "must be a number" };
    case "duration": {
      const d = parseConfigDuration(text);
      return d.ok ? { ok: true, value: text } : { ok: false, problem: durationProblem(d.problem, text) };
    }
    case "list":
      return { ok: true, value: text.trim() === "" ? [] : text.split(",").map((s) => s.trim()) };
    default:
      return { ok: true, value: text };
  }
}

function readYamlRoot(text: string, problems: string[]): Record<string, unknown> | undefined {
  const docs = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false });
  const list = Array.isArray(docs) ? docs : [docs];
  if (list.length === 0) {
    problems.push("config file is empty");
    return undefined;
  }
  if (list.length > 1) {
    problems.push(`config file must contain exactly one YAML document, found ${list.length}`);
    return undefined;
  }
  const doc = list[0]!;
  if (doc.errors.length > 0) {
    for (const e of doc.errors) problems.push(`YAML: ${e.message.split("\n")[0]}`);
    return undefined;
  }
  if (!isMap(doc.contents)) {
    problems.push("config must be a YAML mapping of keys to values");
    return undefined;
  }
  if (!checkMapKeys(doc.contents as Node, "", problems)) return undefined;
  return doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
}

/** Refuses non-string keys and case-insensitive collisions in every mapping, recursively. */
function checkMapKeys(node: Node | null | undefined, path: string, problems: string[]): boolean {
  let ok = true;
  if (isMap(node)) {
    const seen = new Map<string, string>();
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? pair.key.value : undefined;
      if (typeof key !== "string") {
        problems.push(`${path === "" ? "config" : path} has a key that is not a string`);
        ok = false;
        continue;
      }
      const lower = key.toLowerCase();
      const earlier = seen.get(lower);
      if (earlier !== undefined) {
        problems.push(
          `keys ${JSON.stringify(join(path, earlier))} and ${JSON.stringify(join(path, key))} collide (keys are compared case-insensitively)`,
        );
        ok = false;
      }
      seen.set(lower, key);
      ok = checkMapKeys(pair.value as Node, join(path, key), problems) && ok;
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      ok = checkMapKeys(item as Node, `${path}[${i}]`, problems) && ok;
    });
  }
  return ok;
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** Thrown by the loader when a configuration has problems; `problems` lists every one. */
export class ConfigError extends FredError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super("ERR_CONFIG_INVALID", `invalid configuration:\n  - ${problems.join("\n  - ")}`, {
      details: { problems },
    });
    this.name = "ConfigError";
    this.problems = problems;
  }
}
