import { parseGoDuration } from "../../core/duration.ts";
import type { ServiceSpec } from "../../core/manifest/index.ts";
import type { ParsedManifest } from "../kit/index.ts";

/**
 * The part of a validated manifest service the Docker substrate turns into a container.
 * The kit hands us the manifest structurally (already validated by the manifest module);
 * this adapter reads it into plain, typed values, accepting durations either as Go text or
 * as nanoseconds so it does not depend on which normalised form the parser emits.
 */

/**
 * The manifest fields read below, checked against the parser's own type: renaming a field
 * in `src/core/manifest` breaks this line at compile time instead of silently dropping it.
 */
export const READ_FIELDS: readonly (keyof ServiceSpec)[] = [
  "image",
  "ports",
  "expose",
  "env",
  "command",
  "args",
  "labels",
  "health_check",
  "tmpfs",
  "user",
  "depends_on",
  "stop_grace_period",
  "init",
  "credentials",
];

export type DependCondition = "service_started" | "service_healthy";

export interface HealthCheckModel {
  /** Docker form: ["CMD", …], ["CMD-SHELL", "…"] or ["NONE"]. */
  test: string[];
  intervalNs?: number;
  timeoutNs?: number;
  retries?: number;
  startPeriodNs?: number;
}

export interface ServiceModel {
  name: string;
  image: string;
  /** Published ports, "<port>/<proto>" with a lowercase protocol. */
  ports: string[];
  /** Tenant-network-only ports ("<port>/tcp"). */
  expose: string[];
  env: Record<string, string>;
  command?: string[];
  args?: string[];
  labels: Record<string, string>;
  healthCheck?: HealthCheckModel;
  tmpfs: string[];
  user?: string;
  dependsOn: Record<string, DependCondition>;
  stopGracePeriodNs?: number;
  init?: boolean;
  /** Pull credentials for this service's image registry (a secret: never logged or shown). */
  credentials?: { host: string; username: string; password: string };
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.map((v) => String(v)) : undefined;
}

function stringMap(value: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(record(value)).map(([k, v]) => [k, String(v)]));
}

function durationNs(value: unknown): number | undefined {
  if (typeof value === "number") return value > 0 ? value : undefined;
  if (typeof value === "string" && value !== "") {
    const ns = parseGoDuration(value);
    return ns > 0 ? ns : undefined;
  }
  return undefined;
}

function healthCheck(value: unknown): HealthCheckModel | undefined {
  const raw = record(value);
  const test = strings(raw.test);
  if (!test || test.length === 0) return undefined;
  const out: HealthCheckModel = { test };
  const interval = durationNs(raw.interval);
  const timeout = durationNs(raw.timeout);
  const startPeriod = durationNs(raw.start_period);
  if (interval !== undefined) out.intervalNs = interval;
  if (timeout !== undefined) out.timeoutNs = timeout;
  if (startPeriod !== undefined) out.startPeriodNs = startPeriod;
  if (typeof raw.retries === "number" && raw.retries > 0) out.retries = raw.retries;
  return out;
}

function portKey(key: string): string {
  const [port, proto] = key.split("/");
  return `${Number(port)}/${(proto ?? "tcp").toLowerCase()}`;
}

export function serviceModel(name: string, raw: Record<string, unknown>): ServiceModel {
  const model: ServiceModel = {
    name,
    image: String(raw.image),
    ports: Object.keys(record(raw.ports)).map(portKey).sort(),
    expose: [...new Set((strings(raw.expose) ?? []).map((p) => `${Number(p)}/tcp`))].sort(),
    env: stringMap(raw.env),
    labels: stringMap(raw.labels),
    tmpfs: strings(raw.tmpfs) ?? [],
    dependsOn: Object.fromEntries(
      Object.entries(record(raw.depends_on)).map(([target, dep]) => [
        target,
        record(dep).condition === "service_healthy" ? "service_healthy" : "service_started",
      ]),
    ) as Record<string, DependCondition>,
  };
  const command = strings(raw.command);
  const args = strings(raw.args);
  const health = healthCheck(raw.health_check);
  const grace = durationNs(raw.stop_grace_period);
  if (command && command.length > 0) model.command = command;
  if (args && args.length > 0) model.args = args;
  if (health) model.healthCheck = health;
  if (typeof raw.user === "string" && raw.user !== "") model.user = raw.user;
  if (grace !== undefined) model.stopGracePeriodNs = grace;
  if (typeof raw.init === "boolean") model.init = raw.init;
  const creds = record(raw.credentials);
  if (
    typeof creds.host === "string" &&
    typeof creds.username === "string" &&
    typeof creds.password === "string"
  )
    model.credentials = { host: creds.host, username: creds.username, password: creds.password };
  return model;
}

/** Every service of the manifest, sorted by name. */
export function serviceModels(manifest: ParsedManifest): ServiceModel[] {
  return Object.keys(manifest.services)
    .sort()
    .map((name) => serviceModel(name, manifest.services[name] as Record<string, unknown>));
}

/** A health check that gates startup: present and not ["NONE"]. */
export function hasActiveHealthCheck(model: ServiceModel): boolean {
  return model.healthCheck !== undefined && model.healthCheck.test[0] !== "NONE";
}

/**
 * Services in start order: every service after the services it depends on (the manifest
 * validator already refused cycles; a leftover cycle is broken by name order).
 */
export function startOrder(models: readonly ServiceModel[]): ServiceModel[] {
  const byName = new Map(models.map((m) => [m.name, m]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: ServiceModel[] = [];
  const visit = (m: ServiceModel): void => {
    if (done.has(m.name) || visiting.has(m.name)) return;
    visiting.add(m.name);
    for (const dep of Object.keys(m.dependsOn).sort()) {
      const target = byName.get(dep);
      if (target) visit(target);
    }
    visiting.delete(m.name);
    done.add(m.name);
    out.push(m);
  };
  for (const m of models) visit(m);
  return out;
}
