import { stringify } from "yaml";
import { type CheckOptions, checkProviderConfig } from "../../../src/provider/config/index.ts";

export const PROVIDER_UUID = "0190f3a2-7c1e-7000-8000-0000000000aa";
export const PROVIDER_ADDRESS = "manifest12xq57yyxwzkw6tthcxq9mhtxxj7f63e3skczzy";
export const OTHER_ADDRESS = "manifest17v5vws89w262da7p4wrku7hll46mml9n7wg90m";
export const SKU_A = "0190f3a2-7c1e-7000-8000-00000000000a";
export const SKU_B = "0190f3a2-7c1e-7000-8000-00000000000b";
export const SECRET_1 = "backend-one-secret-0123456789abcdef";
export const SECRET_2 = "backend-two-secret-0123456789abcdef";

/** A valid development configuration as a plain object; tests mutate a copy. */
export function baseConfig(): Record<string, unknown> {
  return {
    provider_uuid: PROVIDER_UUID,
    provider_address: PROVIDER_ADDRESS,
    keyring_dir: "/tmp/keyring",
    key_name: "provider",
    callback_base_url: "http://127.0.0.1:8080",
    placement_store_db_path: "/tmp/fred/placements.db",
    backends: [
      { name: "one", url: "http://127.0.0.1:9001", hmac_secret: SECRET_1, skus: [SKU_A], default: true },
      { name: "two", url: "http://127.0.0.1:9002", hmac_secret: SECRET_2, skus: [SKU_A, SKU_B] },
    ],
  };
}

export function yamlOf(obj: Record<string, unknown>): string {
  return stringify(obj);
}

/**
 * The problems a configuration object produces (empty when valid). `options.refusedKeys`
 * lifts refusals, for the rules of keys whose feature is not built yet.
 */
export function problemsOf(
  mutate: (c: Record<string, unknown>) => void,
  env: Record<string, string> = {},
  options: CheckOptions = {},
): string[] {
  const c = baseConfig();
  mutate(c);
  const r = checkProviderConfig(yamlOf(c), env, options);
  return r.ok ? [] : r.problems;
}

export function backend(c: Record<string, unknown>, i: number): Record<string, unknown> {
  return (c.backends as Record<string, unknown>[])[i]!;
}
