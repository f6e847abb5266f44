import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { parseConfigDuration } from "../../../core/duration.ts";
import { isLoopbackHost, listenAddress } from "../../../core/host-port.ts";
import { isValidCustomDomain } from "../../../core/lease-items.ts";

/**
 * The `ingress:` block of docker-backend.yaml. Key names follow the reference backend where
 * it has them (`enabled`, `wildcard_domain`, `custom_domain_dns_*`); the proxy keys are ours
 * (Caddy, driven through its admin API). The reference's Traefik-only keys are refused with
 * a reason instead of being accepted and ignored.
 */

export const REFUSED_INGRESS_KEYS: Record<string, string> = {
  entrypoint: "this backend drives Caddy, not Traefik: set https_listen instead",
  custom_domain_cert_resolver:
    "certificates follow `tls` (internal, acme or files); there is no resolver name",
  custom_domain_middlewares:
    "Traefik middlewares do not exist here; the backend writes every proxy route itself",
};

const DEFAULT_RESOLVERS = ["1.1.1.1:53", "8.8.8.8:53", "9.9.9.9:53"];

const hostPort = (name: string) =>
  z
    .string()
    .refine((v) => listenAddress(v) !== undefined, { message: `${name}: expected host:port or :port` });

const tlsSchema = z.union([
  z.literal("internal"),
  z.literal("acme"),
  z.strictObject({ cert_file: z.string().min(1), key_file: z.string().min(1) }),
]);

export const ingressSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    wildcard_domain: z
      .string()
      .refine(isValidCustomDomain, {
        message: "wildcard_domain: a lowercase domain name such as apps.example.com",
      })
      .optional(),
    proxy: z.literal("caddy").default("caddy"),
    admin_url: z.string().min(1).default("http://127.0.0.1:2019"),
    https_listen: hostPort("https_listen").default(":443"),
    tls: tlsSchema.default("internal"),
    acme_email: z.email().optional(),
    acme_ca: z.url({ protocol: /^https?$/ }).optional(),
    ask_listen: hostPort("ask_listen").default("127.0.0.1:0"),
    health_interval: z.string().default("10s"),
    custom_domain_dns_resolvers: z
      .array(hostPort("custom_domain_dns_resolvers"))
      .min(1)
      .default(DEFAULT_RESOLVERS),
    custom_domain_dns_quorum: z.number().int().min(0).default(0),
    custom_domain_dns_check_disabled: z.boolean().default(false),
  })
  .optional();

export type IngressFile = z.output<typeof ingressSchema>;

export type IngressTls =
  | { readonly kind: "internal" }
  | { readonly kind: "acme" }
  | { readonly kind: "files"; readonly certFile: string; readonly keyFile: string };

export interface IngressConfig {
  readonly wildcardDomain: string;
  readonly adminUrl: string;
  readonly httpsListen: string;
  readonly tls: IngressTls;
  readonly acmeEmail?: string;
  readonly acmeCa?: string;
  readonly askHost: string;
  readonly askPort: number;
  readonly healthIntervalMs: number;
  readonly dnsResolvers: readonly string[];
  /** Resolvers that must answer for a custom domain to count as ready (majority when 0 in the file). */
  readonly dnsQuorum: number;
  readonly dnsCheckDisabled: boolean;
}

/**
 * Caddy's admin API has no authentication: anyone who reaches it rewrites the proxy. Only a
 * loopback http URL or a unix socket is accepted, so it is never reachable from the network.
 */
export function adminUrlProblem(url: string): string | undefined {
  if (url.startsWith("unix/") || url.startsWith("unix://")) {
    return url
      .replace(/^unix:?\/\//, "")
      .replace(/^unix\//, "")
      .startsWith("/")
      ? undefined
      : "a unix socket URL needs an absolute path (unix:///run/caddy/admin.sock)";
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "not a URL";
  }
  if (parsed.protocol !== "http:") return "only http:// on loopback or a unix socket is accepted";
  if (!isLoopbackHost(parsed.hostname)) return `${parsed.hostname} is not a loopback address`;
  if (parsed.pathname !== "/" || parsed.search !== "" || parsed.username !== "")
    return "give the bare origin (no path, query or credentials)";
  return undefined;
}

/**
 * The files mode's certificate, checked at startup (Caddy would only fail at the first
 * handshake): both files readable PEM, the key the certificate's own, and the certificate
 * covering every `<label>.<wildcard_domain>`. Caddy reads the files itself, so they must be
 * readable by its user too.
 */
function certificateProblem(certFile: string, keyFile: string, wildcard: string): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(certFile));
  } catch (err) {
    return `tls.cert_file ${certFile} is not a readable PEM certificate (${(err as Error).message})`;
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(readFileSync(keyFile));
  } catch (err) {
    return `tls.key_file ${keyFile} is not a readable PEM private key (${(err as Error).message})`;
  }
  if (!cert.checkPrivateKey(key))
    return `tls.key_file ${keyFile} is not the key of tls.cert_file ${certFile}`;
  // Any one label stands for all: a certificate for *.<wildcard> matches each, a narrower one does not.
  if (cert.checkHost(`fred-probe.${wildcard}`) === undefined)
    return `tls.cert_file ${certFile} does not cover *.${wildcard} (the lease hostnames)`;
  return undefined;
}

/** Validates a parsed block into the frozen config; `undefined` when ingress is off. */
export function ingressConfig(
  file: IngressFile,
  ctx: { abs: (path: string) => string; productionMode: boolean },
): IngressConfig | undefined {
  if (file === undefined || !file.enabled) return undefined;
  const fail = (message: string): never => {
    throw new Error(`ingress.${message}`);
  };
  if (file.wildcard_domain === undefined) fail("wildcard_domain is required when ingress is enabled");
  const adminProblem = adminUrlProblem(file.admin_url);
  if (adminProblem !== undefined)
    fail(`admin_url ${JSON.stringify(file.admin_url)} is refused: ${adminProblem}`);
  const ask = listenAddress(file.ask_listen) as { host: string; port: number };
  if (!isLoopbackHost(ask.host))
    fail("ask_listen must be a loopback address: the certificate gate answers only the local proxy");
  const health = parseConfigDuration(file.health_interval);
  if (!health.ok || health.ms <= 0)
    fail(`health_interval ${JSON.stringify(file.health_interval)} is not a duration > 0`);
  if (file.custom_domain_dns_quorum > file.custom_domain_dns_resolvers.length)
    fail("custom_domain_dns_quorum cannot exceed the number of custom_domain_dns_resolvers");
  if (file.tls === "internal" && ctx.productionMode)
    fail(
      "tls: internal issues certificates no client trusts; production_mode needs acme or cert_file/key_file",
    );
  const tls: IngressTls =
    typeof file.tls === "string"
      ? { kind: file.tls }
      : { kind: "files", certFile: ctx.abs(file.tls.cert_file), keyFile: ctx.abs(file.tls.key_file) };
  if (tls.kind === "files") {
    const problem = certificateProblem(tls.certFile, tls.keyFile, file.wildcard_domain as string);
    if (problem !== undefined) fail(problem);
  }
  const resolvers = file.custom_domain_dns_resolvers;
  return Object.freeze({
    wildcardDomain: file.wildcard_domain as string,
    adminUrl: file.admin_url,
    httpsListen: file.https_listen,
    tls: Object.freeze(tls),
    ...(file.acme_email !== undefined ? { acmeEmail: file.acme_email } : {}),
    ...(file.acme_ca !== undefined ? { acmeCa: file.acme_ca } : {}),
    askHost: ask.host,
    askPort: ask.port,
    healthIntervalMs: health.ok ? health.ms : 0,
    dnsResolvers: Object.freeze([...resolvers]),
    dnsQuorum:
      file.custom_domain_dns_quorum === 0
        ? Math.floor(resolvers.length / 2) + 1
        : file.custom_domain_dns_quorum,
    dnsCheckDisabled: file.custom_domain_dns_check_disabled,
  });
}
