import type Docker from "dockerode";
import type {
  ConnectionInfo,
  InstanceObservation,
  WorkloadObservation,
  WorkloadState,
} from "../kit/index.ts";
import { LABEL } from "./names.ts";

/**
 * Reading state back from the engine: our containers are found by label, grouped by
 * lease, and judged per instance. Pure functions over the engine's list rows, so the
 * judgement is testable without an engine.
 */

export type ContainerRow = Docker.ContainerInfo;

export type InstancePhase = "running" | "starting" | "created" | "exited" | "unhealthy" | "other";

export function instancePhase(row: ContainerRow): InstancePhase {
  switch (row.State) {
    case "running":
      if (/\(unhealthy\)/.test(row.Status)) return "unhealthy";
      if (/\(health: starting\)/.test(row.Status)) return "starting";
      return "running";
    case "exited":
    case "dead":
      return "exited";
    case "created":
      return "created";
    default:
      return "other";
  }
}

/**
 * Whether an instance counts as up: running, and healthy when a manifest health check
 * gates it (an image's own HEALTHCHECK is reported but never decides).
 */
export function isUp(row: ContainerRow): boolean {
  const phase = instancePhase(row);
  if (row.Labels?.[LABEL.healthGated] === "true") return phase === "running";
  return phase === "running" || phase === "starting" || phase === "unhealthy";
}

function exitCode(row: ContainerRow): number | undefined {
  const m = /^Exited \((-?\d+)\)/.exec(row.Status);
  return m ? Number(m[1]) : undefined;
}

function who(row: ContainerRow): string {
  const labels = row.Labels ?? {};
  return `service ${labels[LABEL.serviceName] ?? "?"} instance ${labels[LABEL.instanceIndex] ?? "?"}`;
}

/** Tenant-safe reason and message for a failed instance (no host paths, no engine text). */
export function failureOf(row: ContainerRow): { reason: string; message: string } | undefined {
  const phase = instancePhase(row);
  if (phase === "exited") {
    const code = exitCode(row);
    return {
      reason: "ContainerExited",
      message: `${who(row)} exited unexpectedly${code === undefined ? "" : ` with code ${code}`}`,
    };
  }
  // Only a manifest health check counts; an image's own HEALTHCHECK never fails a lease.
  if (phase === "unhealthy" && row.Labels?.[LABEL.healthGated] === "true") {
    return { reason: "HealthCheckFailed", message: `${who(row)} failed its health check` };
  }
  return undefined;
}

/** Groups rows by their lease label; rows without one are not ours and are skipped. */
export function groupByLease(rows: readonly ContainerRow[]): Map<string, ContainerRow[]> {
  const out = new Map<string, ContainerRow[]>();
  for (const row of rows) {
    const lease = row.Labels?.[LABEL.leaseUuid];
    if (!lease) continue;
    const list = out.get(lease) ?? [];
    list.push(row);
    out.set(lease, list);
  }
  for (const list of out.values()) list.sort((a, b) => instanceOrder(a).localeCompare(instanceOrder(b)));
  return out;
}

function instanceOrder(row: ContainerRow): string {
  const labels = row.Labels ?? {};
  return `${labels[LABEL.serviceName] ?? ""}\u0000${(labels[LABEL.instanceIndex] ?? "").padStart(6, "0")}`;
}

/**
 * The rows that describe the lease now. Normally all rows are one release; while an update
 * runs (or after a crash inside one) two releases' containers exist side by side: the
 * release whose instances are all up is the one serving; when no single one is, the lease
 * is between releases (`between`) and the newest release stands for it.
 */
export function servingRows(rows: readonly ContainerRow[]): { rows: ContainerRow[]; between: boolean } {
  const byRelease = new Map<string, ContainerRow[]>();
  for (const row of rows) {
    const release = row.Labels?.[LABEL.release] ?? "";
    byRelease.set(release, [...(byRelease.get(release) ?? []), row]);
  }
  if (byRelease.size <= 1) return { rows: [...rows], between: false };
  const up = [...byRelease.values()].filter((list) => list.every(isUp));
  if (up.length === 1) return { rows: up[0] as ContainerRow[], between: false };
  const newest = [...byRelease.keys()].sort((a, b) => Number(b) - Number(a))[0] as string;
  return { rows: byRelease.get(newest) as ContainerRow[], between: true };
}

export function observeLease(leaseUuid: string, all: readonly ContainerRow[]): WorkloadObservation {
  const { rows, between } = servingRows(all);
  const instances: InstanceObservation[] = rows.map((row) => ({
    service: row.Labels?.[LABEL.serviceName] ?? "",
    index: Number(row.Labels?.[LABEL.instanceIndex] ?? -1),
    status: instancePhase(row),
    image: row.Image,
  }));
  const first = rows[0]?.Labels ?? {};
  const expected = Number(first[LABEL.instanceCount] ?? rows.length);
  const failed = rows.map(failureOf).find((f) => f !== undefined);
  let state: WorkloadState;
  if (between) state = "partial";
  else if (failed) state = "failed";
  else if (rows.length < expected && rows.some((r) => instancePhase(r) !== "created")) {
    // Started once, now short of instances: something removed a container behind our back.
    state = "failed";
  } else if (rows.length === expected && rows.every(isUp)) state = "running";
  else state = "partial";
  const obs: WorkloadObservation = { leaseUuid, state, instances };
  if (first[LABEL.operationId]) obs.operationId = first[LABEL.operationId];
  if (first[LABEL.release]) obs.release = Number(first[LABEL.release]);
  if (between) return obs;
  if (failed) {
    obs.reason = failed.reason;
    obs.message = failed.message;
  } else if (state === "failed") {
    obs.reason = "ContainerExited";
    obs.message = "a container of the lease is missing";
  }
  return obs;
}

/** The host binding of a container port, preferring the configured bind address. */
function portsOf(row: ContainerRow, bindIp: string): Record<string, { host_ip: string; host_port: string }> {
  const out: Record<string, { host_ip: string; host_port: string }> = {};
  const sorted = [...(row.Ports ?? [])].sort((a, b) => Number(b.IP === bindIp) - Number(a.IP === bindIp));
  for (const p of sorted) {
    if (!p.PublicPort) continue;
    const key = `${p.PrivatePort}/${p.Type}`;
    if (!(key in out)) out[key] = { host_ip: p.IP ?? bindIp, host_port: String(p.PublicPort) };
  }
  return out;
}

/**
 * `GET /info` for a running lease: host, every instance (flat, in service order) and per
 * service; top-level `ports` when the lease has exactly one instance.
 */
export function connectionInfo(
  rows: readonly ContainerRow[],
  opts: { hostAddress: string; bindIp: string; backendName: string },
): ConnectionInfo {
  const instances = rows.map((row) => ({
    service: row.Labels?.[LABEL.serviceName] ?? "",
    instance_index: Number(row.Labels?.[LABEL.instanceIndex] ?? 0),
    container_id: row.Id.slice(0, 12),
    image: row.Image,
    status: row.State,
    ports: portsOf(row, opts.bindIp),
  }));
  const services: Record<string, { instances: unknown[] }> = {};
  for (const { service, ...rest } of instances) {
    const entry = services[service] ?? { instances: [] };
    entry.instances.push(rest);
    services[service] = entry;
  }
  const info: ConnectionInfo = {
    host: opts.hostAddress,
    instances: instances.map(({ service, ...rest }) => ({ ...rest, service_name: service })),
    services,
    metadata: { backend: opts.backendName },
  };
  if (instances.length === 1 && instances[0]) info.ports = instances[0].ports;
  return info;
}
