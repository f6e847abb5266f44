import { Counter, type Registry } from "prom-client";
import { KeyedMutex } from "../../../core/async/index.ts";
import type { Clock } from "../../../core/clock.ts";
import { FredError } from "../../../core/errors.ts";
import type { Logger } from "../../../log.ts";
import { type AskServer, startAskServer } from "./ask-server.ts";
import { CaddyAdmin } from "./caddy-admin.ts";
import {
  type CaddyIds,
  caddyIds,
  caJson,
  certificateJson,
  customPolicyJson,
  hostsPolicyJson,
  type Route,
  serverJson,
  stableJson,
} from "./caddy-config.ts";
import type { IngressConfig } from "./config.ts";
import { dnsReadiness } from "./dns-gate.ts";
import { customDomainProblem } from "./hostnames.ts";

/**
 * The ingress controller: a route table (lease → instance hostnames and custom domains)
 * that the Docker substrate fills on ready and empties on close, written to Caddy as the
 * objects this backend owns. The proxy's config is derived state: every write is computed
 * from the table, a health loop re-applies when Caddy lost it (a restart), and a backend
 * restart rebuilds the table from the journal. Writes are serialised and diffed against
 * what was last applied, so an unchanged table costs no admin call.
 */

export interface InstanceRoute {
  service: string;
  index: number;
  host: string;
  dial: string;
}

export type GateOutcome = "allowed" | "dns_not_ready" | "not_on_chain" | "refused";

export interface IngressOptions {
  config: IngressConfig;
  backendName: string;
  clock: Clock;
  log: Logger;
  registry?: Registry;
  /** DNS readiness seam (tests point it at their own server through the config instead). */
  dnsReady?: (domain: string) => Promise<boolean>;
}

interface LeaseEntry {
  instances: InstanceRoute[];
}

export class Ingress {
  readonly #config: IngressConfig;
  readonly #ids: CaddyIds;
  readonly #backendName: string;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #admin: CaddyAdmin;
  readonly #writes = new KeyedMutex();
  readonly #leases = new Map<string, LeaseEntry>();
  /** Each lease's items that carry a custom domain, as last told by provision or reconcile. */
  readonly #domains = new Map<string, DomainItem[]>();
  /** Stable JSON of each object as last written to Caddy. */
  readonly #applied = new Map<string, string>();
  #appliedRoutes = new Map<string, string>();
  readonly #dnsReady: (domain: string) => Promise<boolean>;
  #ask: AskServer | undefined;
  #stopHealth = () => {};
  #closed = false;
  /** Writes wait for `activate`: until the table is rebuilt, Caddy keeps what it had. */
  #active = false;
  readonly #metrics: { applied: Counter; removed: Counter; failed: Counter; gate: Counter<"outcome"> };

  constructor(opts: IngressOptions) {
    this.#config = opts.config;
    this.#ids = caddyIds(opts.backendName);
    this.#backendName = opts.backendName;
    this.#clock = opts.clock;
    this.#log = opts.log.child({ component: "ingress" });
    this.#admin = new CaddyAdmin(opts.config.adminUrl, opts.clock);
    this.#dnsReady =
      opts.dnsReady ??
      (async (domain) =>
        (await dnsReadiness(domain, { resolvers: this.#config.dnsResolvers, quorum: this.#config.dnsQuorum }))
          .ready);
    const registers = opts.registry ? [opts.registry] : [];
    this.#metrics = {
      applied: new Counter({
        name: "fred_ingress_routes_applied_total",
        help: "proxy routes added or replaced",
        registers,
      }),
      removed: new Counter({
        name: "fred_ingress_routes_removed_total",
        help: "proxy routes removed",
        registers,
      }),
      failed: new Counter({
        name: "fred_ingress_route_failures_total",
        help: "route changes the proxy refused or missed",
        registers,
      }),
      gate: new Counter({
        name: "fred_ingress_custom_domain_gate_total",
        help: "certificate asks for custom domains, by outcome",
        labelNames: ["outcome"],
        registers,
      }),
    };
  }

  get wildcardDomain(): string {
    return this.#config.wildcardDomain;
  }

  /** The `ask` URL Caddy is configured with (after `start`). */
  get askUrl(): string | undefined {
    return this.#ask?.url;
  }

  /** Checks the proxy answers and refuses a foreign `ask`; starts the ask listener. Writes nothing yet. */
  async start(): Promise<void> {
    try {
      await this.#admin.get("");
    } catch (err) {
      throw new FredError(
        "ERR_INGRESS_PROXY",
        `ingress: Caddy's admin API at ${this.#config.adminUrl} does not answer`,
        {
          cause: err,
        },
      );
    }
    await this.#checkAsk();
    this.#ask = await startAskServer({
      host: this.#config.askHost,
      port: this.#config.askPort,
      path: this.#ids.askPath,
      approve: (domain) => this.approve(domain),
      onError: (err) => this.#log.warn({ err }, "certificate ask failed"),
    });
  }

  /** Called once the table is rebuilt from the journal: writes our objects, starts the health loop. */
  async activate(): Promise<void> {
    this.#active = true;
    await this.apply();
    this.#scheduleHealth();
  }

  async #checkAsk(): Promise<void> {
    const onDemand = (await this.#admin.get("apps/tls/automation/on_demand").catch(() => null)) as {
      ask?: unknown;
    } | null;
    const ask = onDemand?.ask;
    if (
      typeof ask === "string" &&
      ask !== "" &&
      !new URL(ask, "http://x").pathname.startsWith(this.#ids.askPath)
    ) {
      throw new FredError(
        "ERR_INGRESS_CONFLICT",
        `ingress: Caddy already has an on-demand TLS ask (${ask}); this backend gates certificates itself and will not replace it`,
      );
    }
  }

  /** Routes of a ready lease (replacing any earlier ones); custom domains default to its items. */
  async setLease(
    lease: string,
    instances: readonly InstanceRoute[],
    items: readonly { service_name?: string; custom_domain?: string }[],
  ): Promise<void> {
    this.#leases.set(lease, { instances: [...instances] });
    if (!this.#domains.has(lease)) this.#domains.set(lease, domainItems(items));
    await this.#applyQuietly();
  }

  /** Removes the lease's routes (stopped, being replaced); its custom domains are remembered. */
  async dropLease(lease: string): Promise<void> {
    if (this.#leases.delete(lease)) await this.#applyQuietly();
  }

  /** The lease is gone for good (closed): forget its custom domains too. */
  async forgetLease(lease: string): Promise<void> {
    this.#domains.delete(lease);
    await this.dropLease(lease);
  }

  /** Applies the chain's custom domains for a lease; false when nothing changed. */
  async setCustomDomains(
    lease: string,
    items: readonly { service_name?: string; custom_domain?: string }[],
  ): Promise<boolean> {
    const next = domainItems(items);
    const before = this.#domains.get(lease);
    if (before !== undefined && stableJson(before) === stableJson(next)) return false;
    this.#domains.set(lease, next);
    try {
      if (this.#leases.has(lease)) await this.apply();
    } catch (err) {
      // Not in effect: keep the earlier domains, so that the caller's retry with these
      // ones is a change again (the kit restores its journal row the same way).
      if (before === undefined) this.#domains.delete(lease);
      else this.#domains.set(lease, before);
      throw err;
    }
    return true;
  }

  /** `fqdn` per instance, per service (its custom domain when routed) and for the lease. */
  fqdns(lease: string): { instances: Map<string, string>; services: Map<string, string> } {
    const entry = this.#leases.get(lease);
    const instances = new Map<string, string>();
    const services = new Map<string, string>();
    for (const i of entry?.instances ?? []) {
      instances.set(`${i.service}/${i.index}`, i.host);
      if (!services.has(i.service)) services.set(i.service, i.host);
    }
    for (const [service, domain] of domainMap(this.#domains.get(lease) ?? [], entry?.instances ?? [])) {
      if (services.has(service) && customDomainProblem(domain, this.#config.wildcardDomain) === undefined)
        services.set(service, domain);
    }
    return { instances, services };
  }

  #routes(): { routes: Route[]; custom: string[] } {
    const routes: Route[] = [];
    const custom: string[] = [];
    for (const [lease, entry] of this.#leases) {
      for (const i of entry.instances) routes.push({ host: i.host, dial: i.dial });
      for (const [service, domain] of domainMap(this.#domains.get(lease) ?? [], entry.instances)) {
        const target = entry.instances.find((i) => i.service === service && i.index === 0);
        if (target === undefined) continue;
        const problem = customDomainProblem(domain, this.#config.wildcardDomain);
        if (problem !== undefined) {
          this.#log.warn({ lease_uuid: lease, service, domain, problem }, "custom domain refused");
          continue;
        }
        routes.push({ host: domain, dial: target.dial });
        custom.push(domain);
      }
    }
    return { routes, custom };
  }

  /**
   * The `ask` gate. Our own hostnames pass while routed; a custom domain passes only while a
   * lease ready here has it from the chain, and its DNS resolves at quorum (unless disabled).
   */
  async approve(domain: string): Promise<boolean> {
    const { routes, custom } = this.#routes();
    if (domain.endsWith(`.${this.#config.wildcardDomain}`)) {
      if (!custom.includes(domain)) return routes.some((r) => r.host === domain);
    }
    let outcome: GateOutcome;
    if (customDomainProblem(domain, this.#config.wildcardDomain) !== undefined) outcome = "refused";
    else if (!custom.includes(domain)) outcome = "not_on_chain";
    else if (this.#config.dnsCheckDisabled || (await this.#dnsReady(domain))) outcome = "allowed";
    else outcome = "dns_not_ready";
    this.#metrics.gate.inc({ outcome });
    this.#log.info({ domain, outcome }, "custom domain certificate ask");
    return outcome === "allowed";
  }

  async #applyQuietly(): Promise<void> {
    await this.apply().catch((err) =>
      this.#log.warn({ err }, "proxy update failed; the health loop retries"),
    );
  }

  /** Writes every owned object that differs from what was last applied. */
  apply(): Promise<void> {
    return this.#writes.run("caddy", async () => {
      if (this.#closed || !this.#active) return;
      const { routes, custom } = this.#routes();
      try {
        await this.#write(routes, custom);
      } catch (err) {
        this.#metrics.failed.inc(changedRoutes(this.#appliedRoutes, routes) || 1);
        throw err;
      }
    });
  }

  async #write(routes: Route[], custom: string[]): Promise<void> {
    const ids = this.#ids;
    const config = this.#config;
    if (config.tls.kind === "internal") {
      await this.#put("ca", "apps/pki/certificate_authorities", ids.ca, caJson(this.#backendName));
    }
    const cert = certificateJson(ids, config);
    if (cert !== undefined && this.#applied.get("cert") !== stableJson(cert)) {
      await this.#admin.deleteById(ids.certificate);
      await this.#admin.ensureObject("apps/tls/certificates");
      if ((await this.#admin.get("apps/tls/certificates/load_files")) === null)
        await this.#admin.put("apps/tls/certificates/load_files", []);
      await this.#admin.append("apps/tls/certificates/load_files", cert);
      this.#applied.set("cert", stableJson(cert));
    }
    if (this.#ask !== undefined && this.#applied.get("ask") !== this.#ask.url) {
      await this.#admin.ensureObject("apps/tls/automation/on_demand");
      await this.#admin
        .put("apps/tls/automation/on_demand/ask", this.#ask.url)
        .catch(async () => this.#admin.patch("apps/tls/automation/on_demand/ask", this.#ask?.url));
      this.#applied.set("ask", this.#ask.url);
    }
    await this.#policy(ids.hostsPolicy, hostsPolicyJson(ids, config));
    await this.#policy(ids.customPolicy, customPolicyJson(ids, config, custom));
    await this.#put("server", "apps/http/servers", ids.serverKey, serverJson(ids, config, routes));
    const next = new Map(routes.map((r) => [r.host, r.dial]));
    let removed = 0;
    for (const host of this.#appliedRoutes.keys()) if (!next.has(host)) removed++;
    const added = changedRoutes(this.#appliedRoutes, routes);
    if (added > 0) this.#metrics.applied.inc(added);
    if (removed > 0) this.#metrics.removed.inc(removed);
    this.#appliedRoutes = next;
  }

  /** Creates or replaces one keyed object under a map path. */
  async #put(key: string, parent: string, name: string, value: unknown): Promise<void> {
    const json = stableJson(value);
    if (this.#applied.get(key) === json) return;
    await this.#admin.ensureObject(parent);
    await this.#admin.putOrPatch(`${parent}/${name}`, value);
    this.#applied.set(key, json);
  }

  /** Our policies go first, so another policy without subjects (a catch-all) never shadows them. */
  async #policy(id: string, value: unknown | undefined): Promise<void> {
    const json = value === undefined ? "" : stableJson(value);
    if (this.#applied.get(id) === json) return;
    if (value === undefined) {
      await this.#admin.deleteById(id);
    } else if ((await this.#admin.getById(id)) !== null) {
      await this.#admin.patchById(id, value);
    } else {
      await this.#admin.ensureObject("apps/tls/automation");
      if ((await this.#admin.get("apps/tls/automation/policies")) === null)
        await this.#admin.put("apps/tls/automation/policies", [value]);
      else await this.#admin.put("apps/tls/automation/policies/0", value);
    }
    this.#applied.set(id, json);
  }

  /** Re-applies everything when Caddy's copy of our server differs from ours (e.g. after a restart). */
  async checkProxy(): Promise<boolean> {
    const { routes } = this.#routes();
    const want = stableJson(serverJson(this.#ids, this.#config, routes));
    const have = await this.#admin.getById(this.#ids.server);
    if (have !== null && stableJson(have) === want) return true;
    this.#log.warn(
      { found: have === null ? "missing" : "different" },
      "proxy config lost or changed; re-applying",
    );
    // The proxy lost what we wrote: every route is written again, and counted as applied.
    await this.#writes.run("caddy", async () => {
      this.#applied.clear();
      this.#appliedRoutes = new Map();
    });
    await this.#checkAsk();
    await this.apply();
    return false;
  }

  #scheduleHealth(): void {
    if (this.#closed) return;
    this.#stopHealth = this.#clock.setTimer(this.#config.healthIntervalMs, () => {
      void this.checkProxy()
        .catch((err) => this.#log.warn({ err }, "proxy health check failed"))
        .finally(() => this.#scheduleHealth());
    });
  }

  /** Stops the health loop and the ask listener; the proxy keeps its routes (a restart rebuilds them). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopHealth();
    await this.#writes.idle();
    await this.#ask?.close();
    await this.#admin.close();
  }
}

interface DomainItem {
  service: string;
  domain: string;
}

function domainItems(items: readonly { service_name?: string; custom_domain?: string }[]): DomainItem[] {
  return items
    .filter((i) => !!i.custom_domain)
    .map((i) => ({ service: i.service_name ?? "", domain: (i.custom_domain as string).toLowerCase() }))
    .sort((a, b) => a.service.localeCompare(b.service));
}

/** service → domain; an unnamed item of a single-service lease names that service. */
function domainMap(items: readonly DomainItem[], instances: readonly InstanceRoute[]): Map<string, string> {
  const services = [...new Set(instances.map((i) => i.service))];
  const out = new Map<string, string>();
  for (const { service, domain } of items) {
    const name = service || (services.length === 1 ? services[0] : undefined);
    if (name !== undefined) out.set(name, domain);
  }
  return out;
}

function changedRoutes(before: Map<string, string>, routes: readonly Route[]): number {
  return routes.filter((r) => before.get(r.host) !== r.dial).length;
}
