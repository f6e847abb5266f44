import { createHash } from "node:crypto";
import { isValidCustomDomain } from "../../../core/lease-items.ts";

/**
 * Which hostname and which port a container gets, as the reference derives them (so a
 * lease moved between implementations keeps its URL): the label mixes a readable service
 * name with a hash of lease, service and instance, and stays one DNS label (≤ 63 chars).
 */

const MAX_LABEL = 63;
const SERVICE_CHARS = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/**
 * `<svc>-<h7>` for a single-instance service, `<svc>-<i>-<h7>` otherwise; a service name
 * too long for the label is cut and suffixed with 8 hex of its own hash. Undefined for a
 * name that is not a lowercase DNS label (nothing a tenant writes becomes a proxy matcher
 * unless it is one).
 */
export function subdomainLabel(
  lease: string,
  service: string,
  index: number,
  quantity: number,
): string | undefined {
  if (!SERVICE_CHARS.test(service) || !Number.isInteger(index) || index < 0) return undefined;
  const h7 = sha256Hex(`${lease}/${service}/${index}`).slice(0, 7);
  const tail = quantity <= 1 ? `-${h7}` : `-${index}-${h7}`;
  let svc = service;
  if (svc.length + tail.length > MAX_LABEL) {
    const room = MAX_LABEL - tail.length - 9;
    svc = `${svc.slice(0, room).replace(/-+$/, "")}-${sha256Hex(service).slice(0, 8)}`;
  }
  return `${svc}${tail}`;
}

/** A manifest port as the service model keeps it: "<port>/<proto>" plus the ingress hint. */
export interface PortChoiceInput {
  ports: readonly string[];
  ingressPort?: string;
}

/** The manifest port marked `ingress`, else TCP 80, else 8080, else the lowest TCP port. */
export function chooseIngressPort(input: PortChoiceInput): number | undefined {
  const tcp = input.ports
    .filter((p) => p.endsWith("/tcp"))
    .map((p) => Number(p.split("/")[0]))
    .filter((n) => Number.isInteger(n) && n > 0 && n <= 65535)
    .sort((a, b) => a - b);
  if (input.ingressPort !== undefined) {
    const hinted = Number(input.ingressPort.split("/")[0]);
    if (tcp.includes(hinted)) return hinted;
  }
  if (tcp.includes(80)) return 80;
  if (tcp.includes(8080)) return 8080;
  return tcp[0];
}

/** True when `domain` is the wildcard domain itself or any name under it. */
export function isUnderWildcard(domain: string, wildcardDomain: string): boolean {
  const d = domain.toLowerCase().replace(/\.$/, "");
  const w = wildcardDomain.toLowerCase();
  return d === w || d.endsWith(`.${w}`);
}

/** A tenant's custom domain we may route: a valid FQDN that is not ours to hand out. */
export function customDomainProblem(domain: string, wildcardDomain: string): string | undefined {
  if (!isValidCustomDomain(domain)) return "not a lowercase fully qualified domain name";
  if (isUnderWildcard(domain, wildcardDomain))
    return `equal to or under ${wildcardDomain}, which this provider assigns to leases`;
  return undefined;
}
