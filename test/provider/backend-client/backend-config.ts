import type { BackendConfig } from "../../../src/provider/config/index.ts";

/**
 * A `backends[]` entry as providerd's config loader would produce it, pointing at `url`
 * (scheme and host taken from it) with `hmacSecret`; `over` changes any field.
 */
export function backendConfigFor(
  url: string,
  hmacSecret: string,
  over: Partial<BackendConfig> = {},
): BackendConfig {
  const u = new URL(url);
  return {
    name: "test",
    url: u.origin,
    scheme: u.protocol === "https:" ? "https" : "http",
    host: u.hostname,
    hmacSecret,
    hmacSecretPrevious: "",
    skus: [],
    isDefault: true,
    timeoutMs: 30_000,
    tlsCaFile: "",
    tlsSkipVerify: false,
    tlsClientCertFile: "",
    tlsClientKeyFile: "",
    fenced: false,
    draining: false,
    ...over,
  };
}
