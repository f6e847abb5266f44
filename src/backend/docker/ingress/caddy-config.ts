import type { IngressConfig } from "./config.ts";

/**
 * The Caddy JSON this backend owns, built from the route table alone (pure). Everything
 * carries an `@id` derived from the backend name, so the controller can find, replace and
 * delete its own objects and nothing else:
 * - one HTTP server listening only on `https_listen`, automatic HTTPS off (no :80 redirect
 *   listener, no certificate management by route scan), TLS on, host routes to the
 *   tenants' bridge addresses, then a catch-all 404;
 * - TLS automation policies for our subjects only: the wildcard domain's labels and the
 *   custom domains currently routed, both on demand (issuance passes the `ask` gate);
 * - for `tls: internal`, a CA of our own with `install_trust: false`, so the host's trust
 *   store is never touched; for files, the wildcard certificate loaded under our tag.
 */

export interface Route {
  host: string;
  /** "<ip>:<port>" on the lease's bridge network. */
  dial: string;
}

export interface CaddyIds {
  serverKey: string;
  server: string;
  hostsPolicy: string;
  customPolicy: string;
  certificate: string;
  ca: string;
  /** Marker in the ask URL path: lets a restarted backend recognise its own gate. */
  askPath: string;
}

export function caddyIds(backendName: string): CaddyIds {
  const safe = backendName.replace(/[^a-z0-9_-]/g, "_");
  return {
    serverKey: `fred_${safe}`,
    server: `fred-${safe}-server`,
    hostsPolicy: `fred-${safe}-hosts`,
    customPolicy: `fred-${safe}-custom`,
    certificate: `fred-${safe}-certificate`,
    ca: `fred_${safe}`,
    askPath: `/fred-ingress-ask/${safe}`,
  };
}

function proxyRoute(r: Route): unknown {
  return {
    match: [{ host: [r.host] }],
    handle: [{ handler: "reverse_proxy", upstreams: [{ dial: r.dial }] }],
    terminal: true,
  };
}

const NOT_FOUND = { handle: [{ handler: "static_response", status_code: 404 }] };

export function serverJson(ids: CaddyIds, config: IngressConfig, routes: readonly Route[]): unknown {
  const sorted = [...routes].sort((a, b) => a.host.localeCompare(b.host));
  return {
    "@id": ids.server,
    listen: [config.httpsListen],
    automatic_https: { disable: true },
    tls_connection_policies: [{}],
    routes: [...sorted.map(proxyRoute), NOT_FOUND],
  };
}

/** Internal CA, else ACME: a wildcard certificate from files cannot cover a tenant's own domain. */
function issuers(ids: CaddyIds, config: IngressConfig): unknown[] {
  if (config.tls.kind === "internal") return [{ module: "internal", ca: ids.ca }];
  return [
    {
      module: "acme",
      ...(config.acmeEmail !== undefined ? { email: config.acmeEmail } : {}),
      ...(config.acmeCa !== undefined ? { ca: config.acmeCa } : {}),
    },
  ];
}

/** Policy for `<label>.<wildcard_domain>`; none with files (the loaded certificate covers them). */
export function hostsPolicyJson(ids: CaddyIds, config: IngressConfig): unknown | undefined {
  if (config.tls.kind === "files") return undefined;
  return {
    "@id": ids.hostsPolicy,
    subjects: [`*.${config.wildcardDomain}`],
    issuers: issuers(ids, config),
    on_demand: true,
  };
}

/** Policy for the routed custom domains; none when there are none (empty subjects would match every name). */
export function customPolicyJson(
  ids: CaddyIds,
  config: IngressConfig,
  domains: readonly string[],
): unknown | undefined {
  if (domains.length === 0) return undefined;
  return {
    "@id": ids.customPolicy,
    subjects: [...domains].sort(),
    issuers: issuers(ids, config),
    on_demand: true,
  };
}

export function caJson(backendName: string): unknown {
  return { name: `Fred ingress CA (${backendName})`, install_trust: false };
}

export function certificateJson(ids: CaddyIds, config: IngressConfig): unknown | undefined {
  if (config.tls.kind !== "files") return undefined;
  return {
    "@id": ids.certificate,
    certificate: config.tls.certFile,
    key: config.tls.keyFile,
    tags: [ids.serverKey],
  };
}

/** JSON with object keys sorted, so a config read back from Caddy compares with ours. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
