import type { ConnectionInfo } from "../../kit/index.ts";
import { LABEL } from "../names.ts";
import type { ContainerRow } from "../observe.ts";
import { chooseIngressPort, subdomainLabel } from "./hostnames.ts";
import type { InstanceRoute } from "./ingress.ts";

/**
 * A ready lease's routes: for each container of a service with a TCP port, the derived
 * hostname and the container's address on its lease's bridge network (never a published
 * host port). Only our own labels (`fred.*`, which tenants may not set) and the validated
 * manifest's port numbers are read; nothing else a tenant writes reaches the proxy.
 */

type RawServices = Record<string, Record<string, unknown>>;

function servicePort(service: Record<string, unknown> | undefined): number | undefined {
  const raw = service?.ports;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const ports: string[] = [];
  let ingressPort: string | undefined;
  for (const [key, options] of Object.entries(raw as Record<string, unknown>)) {
    const [port, proto] = key.split("/");
    const normal = `${Number(port)}/${(proto ?? "tcp").toLowerCase()}`;
    ports.push(normal);
    if ((options as { ingress?: unknown } | null)?.ingress === true) ingressPort = normal;
  }
  return chooseIngressPort({ ports, ...(ingressPort !== undefined ? { ingressPort } : {}) });
}

export function leaseRoutes(opts: {
  leaseUuid: string;
  services: RawServices;
  rows: readonly ContainerRow[];
  /** Where an instance's address is looked up, first found wins (its lease's, then a legacy tenant network). */
  networks: readonly string[];
  wildcardDomain: string;
}): InstanceRoute[] {
  const perService = new Map<string, number>();
  for (const row of opts.rows) {
    const service = row.Labels?.[LABEL.serviceName] ?? "";
    perService.set(service, (perService.get(service) ?? 0) + 1);
  }
  const out: InstanceRoute[] = [];
  for (const row of opts.rows) {
    const service = row.Labels?.[LABEL.serviceName] ?? "";
    const index = Number(row.Labels?.[LABEL.instanceIndex] ?? Number.NaN);
    const port = servicePort(opts.services[service]);
    const ip = opts.networks.map((n) => row.NetworkSettings?.Networks?.[n]?.IPAddress).find((a) => !!a);
    if (port === undefined || !ip) continue;
    const label = subdomainLabel(opts.leaseUuid, service, index, perService.get(service) ?? 1);
    if (label === undefined) continue;
    const dial = ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
    out.push({ service, index, host: `${label}.${opts.wildcardDomain}`, dial });
  }
  return out.sort((a, b) => a.service.localeCompare(b.service) || a.index - b.index);
}

interface InstanceInfo {
  service_name?: string;
  instance_index?: number;
  fqdn?: string;
}

/**
 * `GET /info` with hostnames: `fqdn` on every routed instance (flat and per service), on
 * each service (its custom domain when one is routed, else its first instance's), and at
 * the top level when the lease has a single service.
 */
export function withFqdns(
  info: ConnectionInfo,
  fqdns: { instances: Map<string, string>; services: Map<string, string> },
): ConnectionInfo {
  const add = (i: InstanceInfo, service: string) => {
    const fqdn = fqdns.instances.get(`${service}/${i.instance_index ?? 0}`);
    return fqdn === undefined ? i : { ...i, fqdn };
  };
  const out: ConnectionInfo = { ...info };
  if (info.instances)
    out.instances = (info.instances as InstanceInfo[]).map((i) => add(i, i.service_name ?? ""));
  if (info.services) {
    out.services = Object.fromEntries(
      Object.entries(info.services as Record<string, { instances?: InstanceInfo[] }>).map(([name, s]) => {
        const fqdn = fqdns.services.get(name);
        return [
          name,
          {
            ...s,
            instances: (s.instances ?? []).map((i) => add(i, name)),
            ...(fqdn !== undefined ? { fqdn } : {}),
          },
        ];
      }),
    );
  }
  if (fqdns.services.size === 1) out.fqdn = [...fqdns.services.values()][0] as string;
  return out;
}
