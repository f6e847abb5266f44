export { caddyIds } from "./caddy-config.ts";
export {
  type IngressConfig,
  ingressConfig,
  ingressSchema,
  REFUSED_INGRESS_KEYS,
} from "./config.ts";
export { dnsReadiness } from "./dns-gate.ts";
export { chooseIngressPort, customDomainProblem, isUnderWildcard, subdomainLabel } from "./hostnames.ts";
export { Ingress, type InstanceRoute } from "./ingress.ts";
export { leaseRoutes, withFqdns } from "./lease-routes.ts";
