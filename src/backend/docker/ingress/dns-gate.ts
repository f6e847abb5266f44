import { Resolver } from "node:dns/promises";

/**
 * The DNS readiness check for a tenant's custom domain: the name must resolve (A or AAAA,
 * CNAMEs followed by the resolver) at `quorum` of the configured resolvers before the proxy
 * may order a certificate for it. Asking several independent resolvers keeps one poisoned
 * or stale cache from deciding; a resolver that times out or fails counts as "no".
 */

export interface DnsGateOptions {
  resolvers: readonly string[];
  quorum: number;
  timeoutMs?: number;
}

async function resolvesAt(server: string, domain: string, timeoutMs: number): Promise<boolean> {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  resolver.setServers([server]);
  const found = async (lookup: Promise<string[]>) => (await lookup.catch(() => [])).length > 0;
  if (await found(resolver.resolve4(domain))) return true;
  return found(resolver.resolve6(domain));
}

/** How many resolvers answered with an address, and whether that reaches the quorum. */
export async function dnsReadiness(
  domain: string,
  opts: DnsGateOptions,
): Promise<{ ready: boolean; resolved: number }> {
  const timeoutMs = opts.timeoutMs ?? 2_000;
  const answers = await Promise.all(opts.resolvers.map((r) => resolvesAt(r, domain, timeoutMs)));
  const resolved = answers.filter(Boolean).length;
  return { ready: resolved >= opts.quorum, resolved };
}
