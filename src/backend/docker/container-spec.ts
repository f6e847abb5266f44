import type { ContainerCreateOptions } from "dockerode";
import type { InstanceSpec, WorkloadSpec } from "../kit/index.ts";
import type { DockerBackendConfig } from "./config.ts";
import { instanceName, LABEL } from "./names.ts";
import { hasActiveHealthCheck, type ServiceModel } from "./service-model.ts";

/**
 * One service instance → one hardened container. Everything a tenant can influence comes
 * from the validated manifest; everything that protects the host is fixed here: no
 * capabilities, no privilege gain, read-only root with small tmpfs for /tmp and /run, no
 * restart policy (the backend supervises), limits from the SKU, ports only on
 * `host_bind_ip` with engine-chosen host ports, and the tenant's own bridge network.
 */

export interface InstanceMounts {
  /** image VOLUME path → host directory on the instance's size-limited subvolume */
  durable: ReadonlyMap<string, string>;
  /** image VOLUME paths without durable disk: mounted as tmpfs (never anonymous volumes) */
  ephemeral: readonly string[];
}

const MIB = 1024 * 1024;

export function instanceLabels(spec: WorkloadSpec, instance: InstanceSpec, healthGated: boolean) {
  return {
    [LABEL.managed]: "true",
    [LABEL.leaseUuid]: spec.leaseUuid,
    [LABEL.tenant]: spec.tenant,
    [LABEL.providerUuid]: spec.providerUuid,
    [LABEL.sku]: instance.sku,
    [LABEL.createdAt]: new Date(spec.createdAtMs).toISOString(),
    [LABEL.serviceName]: instance.service,
    [LABEL.instanceIndex]: String(instance.index),
    [LABEL.backendName]: spec.backendName,
    [LABEL.storageId]: spec.storageId,
    [LABEL.operationId]: spec.operationId,
    [LABEL.release]: String(spec.release),
    [LABEL.healthGated]: healthGated ? "true" : "false",
    [LABEL.instanceCount]: String(spec.instances.length),
  };
}

function tmpfsOptions(sizeMb: number): string {
  return `rw,nosuid,nodev,size=${sizeMb}m`;
}

export function buildContainerSpec(args: {
  spec: WorkloadSpec;
  instance: InstanceSpec;
  model: ServiceModel;
  config: DockerBackendConfig;
  network: string;
  mounts: InstanceMounts;
}): ContainerCreateOptions {
  const { spec, instance, model, config, network, mounts } = args;
  const profile = instance.profile;
  const memoryBytes = Math.round(profile.memory_mb * MIB);

  const tmpfs: Record<string, string> = {};
  const size = config.containerTmpfsSizeMb;
  if (config.containerReadonlyRootfs) {
    tmpfs["/tmp"] = tmpfsOptions(size);
    tmpfs["/run"] = tmpfsOptions(size);
  }
  for (const path of model.tmpfs) tmpfs[path] = tmpfsOptions(size);
  for (const path of mounts.ephemeral) tmpfs[path] = tmpfsOptions(size);

  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const port of model.ports) {
    exposed[port] = {};
    bindings[port] = [{ HostIp: config.hostBindIp, HostPort: "" }];
  }
  for (const port of model.expose) exposed[port] = {};

  const health = model.healthCheck;
  const opts: ContainerCreateOptions = {
    name: instanceName(spec.leaseUuid, instance.service, instance.index),
    Image: model.image,
    Env: Object.entries(model.env).map(([k, v]) => `${k}=${v}`),
    Labels: { ...model.labels, ...instanceLabels(spec, instance, hasActiveHealthCheck(model)) },
    ExposedPorts: exposed,
    HostConfig: {
      NanoCpus: Math.round(profile.cpu_cores * 1e9),
      Memory: memoryBytes,
      MemorySwap: memoryBytes,
      PidsLimit: config.containerPidsLimit,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges:true"],
      ReadonlyRootfs: config.containerReadonlyRootfs,
      Tmpfs: tmpfs,
      RestartPolicy: { Name: "no" },
      PortBindings: bindings,
      NetworkMode: network,
      Mounts: [...mounts.durable].map(([target, source]) => ({
        Type: "bind" as const,
        Source: source,
        Target: target,
      })),
      LogConfig: { Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } },
    },
    NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [model.name] } } },
  };
  if (model.command) opts.Entrypoint = model.command;
  if (model.args) opts.Cmd = model.args;
  if (model.user) opts.User = model.user;
  if (model.stopGracePeriodNs !== undefined) opts.StopTimeout = Math.ceil(model.stopGracePeriodNs / 1e9);
  if (model.init !== undefined && opts.HostConfig) opts.HostConfig.Init = model.init;
  if (health) {
    opts.Healthcheck = {
      Test: health.test,
      ...(health.intervalNs !== undefined ? { Interval: health.intervalNs } : {}),
      ...(health.timeoutNs !== undefined ? { Timeout: health.timeoutNs } : {}),
      ...(health.retries !== undefined ? { Retries: health.retries } : {}),
      ...(health.startPeriodNs !== undefined ? { StartPeriod: health.startPeriodNs } : {}),
    };
  }
  return opts;
}

/** A numeric `uid[:gid]` user, to hand durable volume directories to; names stay root-owned. */
export function numericOwner(user: string | undefined): { uid: number; gid: number } | undefined {
  const m = user === undefined ? null : /^(\d+)(?::(\d+))?$/.exec(user);
  if (!m) return undefined;
  const uid = Number(m[1]);
  return { uid, gid: m[2] === undefined ? uid : Number(m[2]) };
}
