import { readFile } from "node:fs/promises";
import { FredError } from "../../core/errors.ts";
import { ConfigError, decodeConfig, type Env } from "./decode.ts";
import { TOP_LEVEL_KEYS } from "./keys.ts";
import type { ProviderConfig } from "./types.ts";
import { checkTopLevel } from "./validate.ts";
import { checkBackends } from "./validate-backends.ts";

export { ConfigError } from "./decode.ts";
export { envName } from "./keys.ts";
export { redactConfig } from "./redact.ts";
export type { BackendConfig, ProviderConfig } from "./types.ts";
export { buildCallbackUrl, type CallbackBase, isLoopbackHost } from "./urls.ts";

/**
 * providerd configuration: YAML text + environment → a frozen, validated object. The
 * loader never reads `process.env` itself; the composition root passes it in.
 */
export type CheckResult = { ok: true; config: ProviderConfig } | { ok: false; problems: string[] };

function camel(key: string): string {
  return key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

export function checkProviderConfig(text: string, env: Env = {}): CheckResult {
  const decoded = decodeConfig(text, env);
  const problems = [...decoded.problems];
  if (decoded.top.size === 0 && problems.length > 0) return { ok: false, problems };
  const billingOnlySkus = decoded.top.get("billing_only_skus") as string[] | undefined;
  const productionMode = decoded.top.get("production_mode") === true;
  const callbackSecret = (decoded.top.get("callback_secret") as string | undefined) ?? "";
  const backends = checkBackends(
    {
      backends: decoded.backends,
      broken: decoded.broken,
      productionMode,
      callbackSecret,
      billingOnlySkus,
      present: decoded.present.has("backends"),
    },
    problems,
  );
  const { callbackBase, rpcUrl } = checkTopLevel(decoded, problems);
  if (problems.length > 0 || callbackBase === undefined) {
    return { ok: false, problems: problems.length > 0 ? problems : ["callback_base_url is required"] };
  }

  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(TOP_LEVEL_KEYS)) {
    if (spec.kind === "backends") continue;
    const name = spec.kind === "duration" ? `${camel(key)}Ms` : camel(key);
    const value = decoded.top.get(key);
    out[name] = value ?? (spec.kind === "stringList" ? [] : "");
  }
  const optionalPath = (p: unknown) => (typeof p === "string" && p !== "" ? p : undefined);
  Object.assign(out, {
    backends,
    callbackBase,
    callbackBaseUrl: `${callbackBase.origin}${callbackBase.path}${callbackBase.query === "" ? "" : `?${callbackBase.query}`}`,
    callbackCanonicalPathPrefix: callbackBase.path,
    rpcUrl,
    payloadStoreDbPath: optionalPath(out.payloadStoreDbPath),
    tokenTrackerDbPath: optionalPath(out.tokenTrackerDbPath),
  });
  return { ok: true, config: deepFreeze(out as unknown as ProviderConfig) };
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

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
