import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { z } from "zod";
import { FredError } from "../../core/errors.ts";
import { ConfigError, decodeConfig, type Env } from "./decode.ts";
import { camelize } from "./introspect.ts";
import { REFUSED_KEYS, type RefusedKeys } from "./refused.ts";
import { type BackendConfig, type FileConfig, fileFields, rpcUrlOf } from "./schema.ts";
import { type CallbackBase, parseCallbackBase } from "./urls.ts";
import { checkTopLevel } from "./validate.ts";
import { checkBackends } from "./validate-backends.ts";

/**
 * providerd configuration: YAML text + environment → a frozen, validated object, through
 * the one schema below (the key fields of schema.ts, then the rules across keys). The
 * loader never reads `process.env` itself; the composition root passes it in.
 */
export const providerConfigSchema = fileFields.transform((file, ctx) => {
  const problems: string[] = [];
  checkBackends(file, problems);
  checkTopLevel(file, problems);
  for (const message of problems) ctx.addIssue({ code: "custom", message });
  return toConfig(file);
});

/** providerd's validated configuration: camelCase, durations in milliseconds (`…Ms`). */
export type ProviderConfig = z.output<typeof providerConfigSchema>;

/**
 * Stands in for a callback base that only the bound listener knows (callback_base_url left
 * out, api_listen_addr on port 0): startProviderd replaces it (withBoundCallbackBase) before
 * any provision can run. Port 0 is no destination, so a URL built from it cannot misdirect.
 */
const UNBOUND_CALLBACK_BASE: CallbackBase = {
  origin: "http://127.0.0.1:0",
  scheme: "http",
  host: "127.0.0.1",
  path: "",
  query: "",
};

function toConfig(file: FileConfig) {
  const { callback_base_url: fileBase, rpc_url: _, backends, ...rest } = file;
  const entries: readonly BackendConfig[] = backends;
  const callbackBase = fileBase ?? UNBOUND_CALLBACK_BASE;
  return {
    ...camelize(fileFields, rest),
    backends: entries,
    callbackBase,
    /** callback_base_url normalised: trailing slashes gone, escapes canonical, query kept. */
    callbackBaseUrl: callbackUrlOf(callbackBase),
    /** callback_base_url was left out: the bound API address gives it at startup. */
    callbackBaseFromListener: fileBase === undefined,
    /** CometBFT RPC (extension); derived from websocket_url when rpc_url is not set. */
    rpcUrl: rpcUrlOf(file),
    /** The placement store's file: "" with database_url (the store is in PostgreSQL). */
    placementStoreDbPath: file.placement_store_db_path ?? "",
    /** The instance's own files (control socket, operator token): state_dir, or the placement store's directory. */
    stateDir: stateDirOf(file),
    /** operator_token_file, or operator-token in the state directory. */
    operatorTokenFile:
      file.operator_token_file === "" ? join(stateDirOf(file), "operator-token") : file.operator_token_file,
  };
}

function stateDirOf(file: FileConfig): string {
  return file.state_dir ?? dirname(file.placement_store_db_path ?? "");
}

function callbackUrlOf(base: CallbackBase): string {
  return `${base.origin}${base.path}${base.query === "" ? "" : `?${base.query}`}`;
}

/**
 * The config with its callback base taken from the API's bound URL (e.g.
 * `http://127.0.0.1:40123`) when the file left callback_base_url out; otherwise unchanged.
 */
export function withBoundCallbackBase(config: ProviderConfig, boundUrl: string): ProviderConfig {
  if (!config.callbackBaseFromListener) return config;
  const base = parseCallbackBase(boundUrl);
  if (!base.ok) throw new FredError("ERR_CONFIG_INVALID", `bound API URL ${boundUrl} ${base.problem}`);
  return deepFreeze({ ...config, callbackBase: base.value, callbackBaseUrl: callbackUrlOf(base.value) });
}

export type CheckResult = { ok: true; config: ProviderConfig } | { ok: false; problems: string[] };

export interface CheckOptions {
  /** The keys refused because their feature is not built (tests of those rules lift it). */
  refusedKeys?: RefusedKeys;
}

export function checkProviderConfig(text: string, env: Env = {}, options: CheckOptions = {}): CheckResult {
  const { input, problems } = decodeConfig(text, env, options.refusedKeys ?? REFUSED_KEYS);
  if (input === undefined) return { ok: false, problems };
  const parsed = providerConfigSchema.safeParse(input);
  if (!parsed.success) problems.push(...problemsOf(parsed.error.issues));
  if (problems.length > 0 || !parsed.success) return { ok: false, problems };
  return { ok: true, config: deepFreeze(parsed.data) };
}

/** Parses and validates; throws ConfigError listing every problem. */
export function parseProviderConfig(text: string, env: Env = {}): ProviderConfig {
  const result = checkProviderConfig(text, env);
  if (!result.ok) throw new ConfigError(result.problems);
  return result.config;
}

export async function readConfigFile(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    throw new FredError("ERR_CONFIG_READ", `cannot read config file ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

export async function loadProviderConfig(path: string, env: Env = {}): Promise<ProviderConfig> {
  return parseProviderConfig(await readConfigFile(path), env);
}

/**
 * One line per issue, the key's path in front of its predicate ("backends[1].timeout
 * must be …"). Unknown keys of a mapping come before the problems of its values, as a
 * reader goes through the file.
 */
function problemsOf(issues: readonly z.core.$ZodIssue[]): string[] {
  const ordered: z.core.$ZodIssue[] = [];
  for (const issue of issues) {
    const at =
      issue.code === "unrecognized_keys" ? ordered.findIndex((o) => isWithin(o.path, issue.path)) : -1;
    ordered.splice(at < 0 ? ordered.length : at, 0, issue);
  }
  return ordered.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => `unknown key ${JSON.stringify(pathText([...issue.path, key]))}`)
      : [issue.path.length === 0 ? issue.message : `${pathText(issue.path)} ${issue.message}`],
  );
}

function isWithin(path: readonly PropertyKey[], prefix: readonly PropertyKey[]): boolean {
  return prefix.every((p, i) => path[i] === p);
}

function pathText(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join("");
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
