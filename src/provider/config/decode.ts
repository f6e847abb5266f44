import { isMap, isScalar, isSeq, type Node, parseAllDocuments } from "yaml";
import { parseDurationMs } from "../../core/duration.ts";
import { FredError } from "../../core/errors.ts";
import { BACKEND_KEYS, envName, type KeySpec, TOP_LEVEL_KEYS, type ValueKind } from "./keys.ts";

/**
 * Structural decoding: YAML text (exactly one document) plus `PROVIDER_<KEY>` overrides
 * become typed values per the key table. Every structural problem is collected rather
 * than thrown, so `--check-config` can print all of them at once. Semantic rules
 * (URLs, secrets, production mode) live in validate.ts and see only well-typed values.
 */
export type Decoded = Map<string, unknown>;

export interface DecodedConfig {
  top: Decoded;
  backends: Decoded[];
  /** Keys the file set explicitly (top level); env overrides apply only to these when no default. */
  present: ReadonlySet<string>;
  /** Keys whose value could not be decoded; semantic rules skip them. */
  broken: ReadonlySet<string>;
  problems: string[];
}

export type Env = Readonly<Record<string, string | undefined>>;

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
  const out: Record<string, unknown> = {};
  if (!checkMapKeys(doc.contents as Node, "", problems)) return undefined;
  Object.assign(out, doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>);
  return out;
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

/** Decodes one value from the file (`fromEnv` false) or from an env string. */
function decodeValue(kind: ValueKind, raw: unknown, path: string, fromEnv: boolean): unknown {
  if (fromEnv) return decodeEnvValue(kind, raw as string, path);
  switch (kind) {
    case "string":
      if (typeof raw !== "string") throw problem(`${path} must be a string`);
      return raw;
    case "bool":
      if (typeof raw !== "boolean") throw problem(`${path} must be true or false`);
      return raw;
    case "int":
      if (typeof raw !== "number" || !Number.isSafeInteger(raw)) throw problem(`${path} must be an integer`);
      return raw;
    case "number":
      if (typeof raw !== "number" || !Number.isFinite(raw)) throw problem(`${path} must be a number`);
      return raw;
    case "duration":
      if (typeof raw !== "string") throw problem(`${path} must be a duration string such as "30s"`);
      return durationMs(raw, path);
    case "stringList":
      if (raw === null) return [];
      if (!Array.isArray(raw) || raw.some((v) => typeof v !== "string")) {
        throw problem(`${path} must be a list of strings`);
      }
      return raw;
    case "backends":
      throw problem(`${path} cannot be decoded as a scalar`);
  }
}

function decodeEnvValue(kind: ValueKind, text: string, path: string): unknown {
  const name = envName(path);
  switch (kind) {
    case "string":
      return text;
    case "bool":
      if (text !== "true" && text !== "false") throw problem(`${name} must be true or false`);
      return text === "true";
    case "int":
      if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
        throw problem(`${name} must be an integer`);
      }
      return Number(text);
    case "number":
      if (text.trim() === "" || !Number.isFinite(Number(text))) throw problem(`${name} must be a number`);
      return Number(text);
    case "duration":
      return durationMs(text, name);
    case "stringList":
      return text.trim() === "" ? [] : text.split(",").map((s) => s.trim());
    case "backends":
      throw problem(`${name} cannot set backends; list them in the config file`);
  }
}

function durationMs(text: string, path: string): number {
  let ms: number;
  try {
    ms = parseDurationMs(text);
  } catch {
    throw problem(
      `${path} is not a valid duration: ${JSON.stringify(text)} (use forms like "500ms", "30s", "5m", "1h")`,
    );
  }
  if (ms < 0) throw problem(`${path} must not be negative`);
  return ms;
}

class Problem extends Error {}
function problem(message: string): Problem {
  return new Problem(message);
}

function defaultValue(spec: KeySpec): unknown {
  if (spec.default === undefined) return undefined;
  if (spec.kind === "duration") return parseDurationMs(spec.default as string);
  return spec.default;
}

function decodeSection(
  raw: Record<string, unknown>,
  table: Readonly<Record<string, KeySpec>>,
  prefix: string,
  out: Decoded,
  broken: Set<string>,
  problems: string[],
): void {
  for (const key of Object.keys(raw)) {
    if (!(key in table)) problems.push(`unknown key ${JSON.stringify(prefix + key)}`);
  }
  for (const [key, spec] of Object.entries(table)) {
    if (spec.kind === "backends") continue;
    if (key in raw) {
      try {
        out.set(key, decodeValue(spec.kind, raw[key], prefix + key, false));
      } catch (err) {
        if (!(err instanceof Problem)) throw err;
        problems.push(err.message);
        broken.add(prefix + key);
      }
    } else if (spec.default !== undefined) {
      out.set(key, defaultValue(spec));
    }
  }
}

export function decodeConfig(text: string, env: Env): DecodedConfig {
  const problems: string[] = [];
  const broken = new Set<string>();
  const top: Decoded = new Map();
  const backends: Decoded[] = [];
  const root = readYamlRoot(text, problems);
  if (root === undefined) return { top, backends, present: new Set(), broken, problems };

  decodeSection(root, TOP_LEVEL_KEYS, "", top, broken, problems);
  if ("backends" in root) decodeBackends(root.backends, backends, broken, problems);
  applyEnv(root, env, top, broken, problems);
  return { top, backends, present: new Set(Object.keys(root)), broken, problems };
}

function decodeBackends(raw: unknown, out: Decoded[], broken: Set<string>, problems: string[]): void {
  if (raw === null) return;
  if (!Array.isArray(raw)) {
    problems.push("backends must be a list of backend entries");
    broken.add("backends");
    return;
  }
  raw.forEach((entry, i) => {
    const decoded: Decoded = new Map();
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      problems.push(`backends[${i}] must be a mapping of backend keys`);
      broken.add(`backends[${i}]`);
    } else {
      decodeSection(
        entry as Record<string, unknown>,
        BACKEND_KEYS,
        `backends[${i}].`,
        decoded,
        broken,
        problems,
      );
    }
    out.push(decoded);
  });
}

/**
 * `PROVIDER_<KEY>` overrides a key only when it has a built-in default or the file
 * sets it: providerd must never start from the environment alone.
 */
function applyEnv(
  root: Record<string, unknown>,
  env: Env,
  top: Decoded,
  broken: Set<string>,
  problems: string[],
): void {
  for (const [key, spec] of Object.entries(TOP_LEVEL_KEYS)) {
    const text = env[envName(key)];
    if (text === undefined) continue;
    if (spec.kind === "backends") {
      problems.push(`${envName(key)} cannot set backends; list them in the config file`);
      continue;
    }
    if (spec.default === undefined && !(key in root)) {
      problems.push(
        `${envName(key)} is set but ${key} is not in the config file; keys without a default must appear in the file`,
      );
      continue;
    }
    try {
      top.set(key, decodeValue(spec.kind, text, key, true));
      broken.delete(key);
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      problems.push(err.message);
      broken.add(key);
    }
  }
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
