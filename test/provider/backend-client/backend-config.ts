import type { BackendConfig } from "../../../src/provider/config/index.ts";
import { parseBackendOrigin } from "../../../src/provider/config/urls.ts";

/**
 * A `backends[]` entry as providerd's config loader would produce it, pointing at `url`
 * (scheme, host or socket path taken from it, `unix:/path` included) with `hmacSecret`;
 * `over` changes any field.
 */
export function backendConfigFor(
  url: string,
  hmacSecret: string,
  over: Partial<BackendConfig> = {},
): BackendConfig {
  const parsed = parseBackendOrigin(url);
  if (!parsed.ok) throw new Error(`backend url ${url} ${parsed.problem}`);
  const { origin, scheme, host, socketPath } = parsed.value;
  return {
    name: "test",
    url: origin,
    scheme,
    host,
    socketPath,
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
