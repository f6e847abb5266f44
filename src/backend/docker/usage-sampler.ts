import { readFileSync } from "node:fs";
import { join } from "node:path";
import type Docker from "dockerode";
import type { InstanceSample } from "../kit/index.ts";
import { run as btrfs } from "./btrfs-volumes.ts";
import { instanceName, LABEL } from "./names.ts";

/**
 * The Docker backend's usage pass, built to stay cheap for a thousand leases:
 *
 * - one engine call per pass (`GET /containers/json` of this storage id's running
 *   containers), never one stats call per container: the stats API samples for a second
 *   per container and costs far more than reading the counters it reads itself;
 * - CPU and memory straight from the container's cgroup files (v2: cpu.stat, memory.current;
 *   v1: cpuacct.usage, cpu.stat, memory.usage_in_bytes), found from the container id and the
 *   engine's cgroup driver
 *   (`docker info` once); network bytes from /proc/<pid>/net/dev of the container's init
 *   process, which sees only the container's network namespace;
 * - the pid, start time, restart count and limits from one inspect per container id, cached until
 *   the container is gone or its pid is (the engine restarted it in place);
 * - disk from the volume's btrfs qgroup — the same accounting that enforces the quota —
 *   with one `btrfs subvolume list` and one `btrfs qgroup show` for all volumes per pass.
 *
 * The cgroup and /proc files are read synchronously: they are kernel pseudo-files served
 * from memory (never a disk wait), and a synchronous read costs a few microseconds where an
 * async one costs four thread-pool round trips (bench/usage-sampling: ~0.9 s of CPU per pass
 * for 1,000 containers with async reads of 7 files each).
 * The roots are injectable so the bench can run a pass against a synthetic tree.
 */
export interface DockerUsageOptions {
  docker: Pick<Docker, "listContainers" | "getContainer" | "info">;
  storageId: string;
  /** The volume root (btrfs, quotas on); undefined: instances have no durable volumes. */
  volumeRoot: string | undefined;
  cgroupRoot?: string;
  procRoot?: string;
  /** Reads the volumes' qgroups; default: the btrfs CLI on `volumeRoot`. */
  qgroups?: (signal: AbortSignal) => Promise<Map<string, { used: number; limit: number | undefined }>>;
}

interface ContainerFacts {
  pid: number;
  startedAtMs: number | undefined;
  restarts: number;
  /** The limits the engine applied (HostConfig), read once per container instead of per pass. */
  cpuLimitCores: number | undefined;
  memoryLimitBytes: number | undefined;
  /** Directory per controller ("" for the v2 unified tree). */
  cgroup: { cpu: string; cpuacct: string; memory: string; unified: string | undefined };
}

type Layout = { version: 1 | 2; driver: "cgroupfs" | "systemd" };

export class DockerUsageSampler {
  readonly #o: DockerUsageOptions;
  readonly #cgroupRoot: string;
  readonly #procRoot: string;
  readonly #facts = new Map<string, ContainerFacts>();
  #layout: Layout | undefined;

  constructor(options: DockerUsageOptions) {
    this.#o = options;
    this.#cgroupRoot = options.cgroupRoot ?? "/sys/fs/cgroup";
    this.#procRoot = options.procRoot ?? "/proc";
  }

  async sample(signal: AbortSignal): Promise<Map<string, InstanceSample[]>> {
    this.#layout ??= await this.#readLayout();
    const rows = await this.#o.docker.listContainers({
      filters: JSON.stringify({
        label: [`${LABEL.managed}=true`, `${LABEL.storageId}=${this.#o.storageId}`],
        status: ["running"],
      }),
      abortSignal: signal,
    } as Docker.ContainerListOptions);
    const disks = this.#o.volumeRoot === undefined ? new Map() : await this.#disks(signal);
    const out = new Map<string, InstanceSample[]>();
    const live = new Set<string>();
    for (const row of rows) {
      const lease = row.Labels?.[LABEL.leaseUuid];
      const service = row.Labels?.[LABEL.serviceName];
      const index = Number(row.Labels?.[LABEL.instanceIndex]);
      // Only the container under the instance's own name (an update's aside copy is not it).
      if (lease === undefined || service === undefined || !Number.isInteger(index)) continue;
      if (!row.Names?.includes(`/${instanceName(lease, service, index)}`)) continue;
      live.add(row.Id);
      const sample = await this.#instance(
        row.Id,
        service,
        index,
        disks.get(instanceName(lease, service, index)),
      );
      if (sample === undefined) continue;
      const list = out.get(lease) ?? [];
      list.push(sample);
      out.set(lease, list);
    }
    for (const id of this.#facts.keys()) if (!live.has(id)) this.#facts.delete(id);
    return out;
  }

  async #instance(
    id: string,
    service: string,
    index: number,
    disk: { used: number; limit: number | undefined } | undefined,
  ): Promise<InstanceSample | undefined> {
    let facts = this.#facts.get(id) ?? (await this.#inspect(id));
    if (facts === undefined) return undefined;
    let net = this.#netDev(facts.pid);
    if (net === undefined) {
      // The pid is gone: the engine restarted the container in place (new pid, new start).
      facts = await this.#inspect(id);
      net = facts === undefined ? undefined : this.#netDev(facts.pid);
      if (facts === undefined || net === undefined) return undefined;
    }
    const cpu = this.#cpu(facts);
    const memoryBytes = this.#memoryBytes(facts);
    if (cpu === undefined || memoryBytes === undefined) return undefined;
    return {
      service,
      index,
      ...cpu,
      cpuLimitCores: facts.cpuLimitCores,
      memoryBytes,
      memoryLimitBytes: facts.memoryLimitBytes,
      networkRxBytes: net.rx,
      networkTxBytes: net.tx,
      diskBytes: disk?.used,
      diskQuotaBytes: disk?.limit,
      restarts: facts.restarts,
      startedAtMs: facts.startedAtMs,
    };
  }

  async #inspect(id: string): Promise<ContainerFacts | undefined> {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await this.#o.docker.getContainer(id).inspect();
    } catch {
      this.#facts.delete(id);
      return undefined;
    }
    if (!info.State.Running || info.State.Pid <= 0) return undefined;
    const started = Date.parse(info.State.StartedAt);
    const facts: ContainerFacts = {
      pid: info.State.Pid,
      startedAtMs: Number.isNaN(started) ? undefined : started,
      restarts: info.RestartCount ?? 0,
      cpuLimitCores: cpuLimit(info.HostConfig),
      memoryLimitBytes: (info.HostConfig?.Memory ?? 0) > 0 ? info.HostConfig.Memory : undefined,
      cgroup: this.#cgroupDirs(id, info.HostConfig?.CgroupParent ?? ""),
    };
    this.#facts.set(id, facts);
    return facts;
  }

  /** Where the engine put the container's cgroup, by driver and cgroup version. */
  #cgroupDirs(id: string, parent: string): ContainerFacts["cgroup"] {
    const layout = this.#layout as Layout;
    const leaf =
      layout.driver === "systemd"
        ? join(parent === "" ? "system.slice" : parent, `docker-${id}.scope`)
        : join(parent === "" ? "docker" : parent, id);
    if (layout.version === 2) {
      const dir = join(this.#cgroupRoot, leaf);
      return { cpu: dir, cpuacct: dir, memory: dir, unified: dir };
    }
    return {
      cpu: join(this.#cgroupRoot, "cpu", leaf),
      cpuacct: join(this.#cgroupRoot, "cpuacct", leaf),
      memory: join(this.#cgroupRoot, "memory", leaf),
      unified: undefined,
    };
  }

  async #readLayout(): Promise<Layout> {
    const info = (await this.#o.docker.info()) as { CgroupDriver?: string; CgroupVersion?: string };
    return {
      version: info.CgroupVersion === "2" ? 2 : 1,
      driver: info.CgroupDriver === "systemd" ? "systemd" : "cgroupfs",
    };
  }

  #cpu(f: ContainerFacts): Pick<InstanceSample, "cpuUsageSeconds" | "cpuThrottledSeconds"> | undefined {
    try {
      if (f.cgroup.unified !== undefined) {
        const stat = keyed(read(join(f.cgroup.unified, "cpu.stat")));
        return {
          cpuUsageSeconds: (stat.get("usage_usec") ?? 0) / 1e6,
          cpuThrottledSeconds: (stat.get("throttled_usec") ?? 0) / 1e6,
        };
      }
      const stat = keyed(read(join(f.cgroup.cpu, "cpu.stat")));
      return {
        cpuUsageSeconds: Number(read(join(f.cgroup.cpuacct, "cpuacct.usage"))) / 1e9,
        cpuThrottledSeconds: (stat.get("throttled_time") ?? 0) / 1e9,
      };
    } catch {
      return undefined;
    }
  }

  #memoryBytes(f: ContainerFacts): number | undefined {
    try {
      const v2 = f.cgroup.unified !== undefined;
      return Number(
        read(join(f.cgroup.unified ?? f.cgroup.memory, v2 ? "memory.current" : "memory.usage_in_bytes")),
      );
    } catch {
      return undefined;
    }
  }

  /** Bytes received and sent on every interface but loopback; undefined when the pid is gone. */
  #netDev(pid: number): { rx: number; tx: number } | undefined {
    let text: string;
    try {
      text = read(join(this.#procRoot, String(pid), "net", "dev"));
    } catch {
      return undefined;
    }
    let rx = 0;
    let tx = 0;
    for (const line of text.split("\n").slice(2)) {
      const [name, rest] = line.split(":");
      if (rest === undefined || name?.trim() === "lo") continue;
      const cols = rest.trim().split(/\s+/);
      rx += Number(cols[0] ?? 0);
      tx += Number(cols[8] ?? 0);
    }
    return { rx, tx };
  }

  /** Volume name → its qgroup's referenced bytes and limit, for every volume at once. */
  #disks(signal: AbortSignal): Promise<Map<string, { used: number; limit: number | undefined }>> {
    return (this.#o.qgroups ?? ((s) => readQgroups(this.#o.volumeRoot as string, s)))(signal);
  }
}

/** Two btrfs calls for the whole file system: subvolume ids by name (volume names are unique), then every level-0 qgroup. */
export async function readQgroups(
  root: string,
  signal: AbortSignal,
): Promise<Map<string, { used: number; limit: number | undefined }>> {
  const names = new Map<string, string>();
  for (const line of (await btrfs(["subvolume", "list", root], signal)).split("\n")) {
    const m = /^ID (\d+) .* path (?:.*\/)?([^/\s]+)$/.exec(line.trim());
    if (m) names.set(`0/${m[1]}`, m[2] as string);
  }
  const out = new Map<string, { used: number; limit: number | undefined }>();
  for (const line of (await btrfs(["qgroup", "show", "-re", "--raw", root], signal)).split("\n")) {
    const [id, rfer, , maxRfer] = line.trim().split(/\s+/);
    const name = id === undefined ? undefined : names.get(id);
    if (name === undefined || rfer === undefined) continue;
    out.set(name, {
      used: Number(rfer),
      limit: maxRfer === undefined || maxRfer === "none" ? undefined : Number(maxRfer),
    });
  }
  return out;
}

const read = (path: string): string => readFileSync(path, "utf8");

/** --cpus sets NanoCpus; a CFS quota set directly shows as CpuQuota / CpuPeriod. */
function cpuLimit(host: Docker.HostConfig | undefined): number | undefined {
  if ((host?.NanoCpus ?? 0) > 0) return (host?.NanoCpus as number) / 1e9;
  if ((host?.CpuQuota ?? 0) > 0) return (host?.CpuQuota as number) / ((host?.CpuPeriod ?? 0) || 100_000);
  return undefined;
}

/** "key value" lines (cpu.stat) as a map. */
function keyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [k, v] = line.split(" ");
    if (k && v !== undefined) out.set(k, Number(v));
  }
  return out;
}
