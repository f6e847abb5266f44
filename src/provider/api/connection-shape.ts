import { FredError } from "../../core/errors.ts";
import type { LeaseInfo } from "../backend-client/index.ts";

/**
 * The backend's `GET /info` answer → the tenant's `connection` object. Port bindings
 * become `{host_ip, host_port: <int>}` (backends send the port as a string); instances
 * keep index, container, image, status, fqdn and ports; a stack's services carry their
 * instances. An fqdn is only ever relayed, never made up: the top level (and each
 * service) takes its first instance's fqdn when it has none of its own, and is omitted
 * when nobody reports one. A shape we cannot read is a backend fault (502), not a guess.
 */
type Json = Record<string, unknown>;

const malformed = () => new FredError("ERR_BACKEND_MALFORMED", "backend info has an unreadable shape");

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function optionalString(v: unknown): string | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw malformed();
  return v;
}

function port(binding: unknown): { host_ip: string; host_port: number } {
  if (!isObject(binding)) throw malformed();
  const raw = binding.host_port;
  const n = typeof raw === "number" ? raw : typeof raw === "string" && raw !== "" ? Number(raw) : 0;
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw malformed();
  return { host_ip: optionalString(binding.host_ip) ?? "", host_port: n };
}

function ports(map: unknown): Json | undefined {
  if (map === undefined || map === null) return undefined;
  if (!isObject(map)) throw malformed();
  const entries = Object.entries(map);
  if (entries.length === 0) return undefined;
  return Object.fromEntries(entries.map(([k, v]) => [k, port(v)]));
}

function instance(raw: unknown): Json {
  if (!isObject(raw)) throw malformed();
  const index = raw.instance_index ?? 0;
  if (typeof index !== "number" || !Number.isInteger(index)) throw malformed();
  const out: Json = { instance_index: index };
  for (const key of ["container_id", "image", "status", "fqdn"] as const) {
    const v = optionalString(raw[key]);
    if (v !== undefined) out[key] = v;
  }
  const p = ports(raw.ports);
  if (p !== undefined) out.ports = p;
  return out;
}

function instances(list: unknown): Json[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw malformed();
  return list.map(instance);
}

export function connectionDetails(info: LeaseInfo): Json {
  const out: Json = { host: info.host ?? "" };
  const insts = instances(info.instances);
  const fqdn = optionalString(info.fqdn) ?? (insts[0]?.fqdn as string | undefined);
  if (fqdn !== undefined) out.fqdn = fqdn;
  const p = ports(info.ports);
  if (p !== undefined) out.ports = p;
  if (insts.length > 0) out.instances = insts;
  if (info.services !== undefined && Object.keys(info.services).length > 0) {
    const services: Json = {};
    for (const [name, raw] of Object.entries(info.services)) {
      if (!isObject(raw)) throw malformed();
      const svcInstances = instances(raw.instances);
      const svc: Json = {};
      const svcFqdn = optionalString(raw.fqdn) ?? (svcInstances[0]?.fqdn as string | undefined);
      if (svcFqdn !== undefined) svc.fqdn = svcFqdn;
      svc.instances = svcInstances;
      services[name] = svc;
    }
    out.services = services;
  }
  const protocol = optionalString(info.protocol);
  if (protocol !== undefined) out.protocol = protocol;
  if (info.metadata !== undefined && Object.keys(info.metadata).length > 0) out.metadata = info.metadata;
  return out;
}
