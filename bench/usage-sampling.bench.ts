/**
 * The cost of one usage pass of the Docker backend (issue 34: ≤ 2 % of one core at the
 * default 10 s interval, i.e. ≤ 200 ms of CPU per pass), with the kit's rings included.
 *
 * 1. synthetic: 1,000 running containers, as a temp dir laid out like /sys/fs/cgroup
 *    (cgroup v1, cgroupfs driver: this host's layout) and /proc/<pid>/net/dev, injected as
 *    the sampler's roots; the engine's container list and inspects are answered in process
 *    (their cost is the engine's, not ours: one list per pass, one inspect per new container)
 *    and the qgroup read is a prepared map (its cost is measured in part 2's btrfs call).
 *    Starting 1,000 real containers is too heavy for a 2-core machine.
 * 2. real: BENCH_USAGE_REAL (default 20) containers of fred-test/volume:1 on the real
 *    engine, sampled through the engine's API and the host's cgroup and /proc files. Run it
 *    under the Docker lock: `flock /tmp/docker-tests.lock npm run bench -- usage-sampling`.
 *    BENCH_USAGE_REAL=0 skips it.
 *
 * Prints one JSON line per part, CPU per pass (user + system of this process) and the load.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import { connectDocker } from "../src/backend/docker/engine.ts";
import { instanceName, LABEL } from "../src/backend/docker/names.ts";
import { DockerUsageSampler } from "../src/backend/docker/usage-sampler.ts";
import { UsageSampler } from "../src/backend/kit/index.ts";
import { systemClock } from "../src/core/clock.ts";
import { createLogger } from "../src/log.ts";

const PASSES = 10;
const GOAL_MS = 200;
const load1 = () => Number(loadavg()[0]!.toFixed(2));

async function measure(
  sampler: DockerUsageSampler,
  expected: number,
): Promise<{ first_pass_cpu_ms: number; cpu_ms_per_pass: number; leases: number }> {
  const rings = new UsageSampler({
    sample: (s) => sampler.sample(s),
    clock: systemClock,
    intervalMs: 10_000,
    logger: createLogger("bench", "silent"),
  });
  const cpuMs = async () => {
    const before = process.cpuUsage();
    await rings.sampleNow();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000;
  };
  const first = await cpuMs();
  let total = 0;
  for (let i = 0; i < PASSES; i++) total += await cpuMs();
  if (rings.leaseCount !== expected)
    throw new Error(`sampled ${rings.leaseCount} leases, expected ${expected}`);
  return {
    first_pass_cpu_ms: Number(first.toFixed(1)),
    cpu_ms_per_pass: Number((total / PASSES).toFixed(1)),
    leases: rings.leaseCount,
  };
}

async function synthetic(n: number): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "fred-usage-bench-"));
  try {
    const storageId = randomUUID();
    const rows: Docker.ContainerInfo[] = [];
    const pids = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const id = randomUUID().replaceAll("-", "").repeat(2);
      const lease = randomUUID();
      const pid = 10_000 + i;
      pids.set(id, pid);
      for (const [ctl, files] of Object.entries({
        cpu: {
          "cpu.stat": "nr_periods 10\nnr_throttled 2\nthrottled_time 12345678\n",
          "cpu.cfs_quota_us": "50000\n",
          "cpu.cfs_period_us": "100000\n",
        },
        cpuacct: { "cpuacct.usage": `${1e9 * i}\n` },
        memory: { "memory.usage_in_bytes": "73400320\n", "memory.limit_in_bytes": "536870912\n" },
      })) {
        const dir = join(root, "cgroup", ctl, "docker", id);
        mkdirSync(dir, { recursive: true });
        for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      }
      mkdirSync(join(root, "proc", String(pid), "net"), { recursive: true });
      writeFileSync(
        join(root, "proc", String(pid), "net", "dev"),
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n  eth0: 1234567    1000    0    0    0     0          0         0   765432     900    0    0    0     0       0          0\n",
      );
      rows.push({
        Id: id,
        Names: [`/${instanceName(lease, "app", 0)}`],
        Labels: { [LABEL.leaseUuid]: lease, [LABEL.serviceName]: "app", [LABEL.instanceIndex]: "0" },
      } as unknown as Docker.ContainerInfo);
    }
    const disks = new Map(rows.map((r) => [r.Names[0]!.slice(1), { used: 5_000_000, limit: 1_073_741_824 }]));
    const docker = {
      info: async () => ({ CgroupDriver: "cgroupfs", CgroupVersion: "1" }),
      listContainers: async () => rows,
      getContainer: (id: string) => ({
        inspect: async () => ({
          State: { Running: true, Pid: pids.get(id), StartedAt: new Date().toISOString() },
          RestartCount: 0,
          HostConfig: { CgroupParent: "", NanoCpus: 500_000_000, Memory: 536_870_912 },
        }),
      }),
    } as unknown as Pick<Docker, "listContainers" | "getContainer" | "info">;
    const sampler = new DockerUsageSampler({
      docker,
      storageId,
      volumeRoot: "/synthetic",
      cgroupRoot: join(root, "cgroup"),
      procRoot: join(root, "proc"),
      qgroups: async () => disks,
    });
    const figures = await measure(sampler, n);
    console.log(
      JSON.stringify({
        bench: "usage_sampling_synthetic",
        note: "1,000 containers as a synthetic cgroup v1 + /proc tree (4 files each); engine list/inspect answered in process",
        containers: n,
        ...figures,
        goal_cpu_ms_per_pass: GOAL_MS,
        share_of_core_at_10s: Number((figures.cpu_ms_per_pass / 10_000).toFixed(4)),
        load1: load1(),
      }),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function real(n: number): Promise<void> {
  const storageId = randomUUID();
  const names: string[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const name = instanceName(randomUUID(), "app", 0);
      names.push(name);
      execFileSync("docker", [
        "run",
        "-d",
        "--name",
        name,
        "--cpus",
        "0.25",
        "--memory",
        "64m",
        "--label",
        `${LABEL.managed}=true`,
        "--label",
        `${LABEL.storageId}=${storageId}`,
        "--label",
        `${LABEL.leaseUuid}=${name.slice(5, 41)}`,
        "--label",
        `${LABEL.serviceName}=app`,
        "--label",
        `${LABEL.instanceIndex}=0`,
        "fred-test/volume:1",
      ]);
    }
    const sampler = new DockerUsageSampler({
      docker: connectDocker(process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock"),
      storageId,
      volumeRoot: undefined,
    });
    const figures = await measure(sampler, n);
    let btrfsMs: number | undefined;
    try {
      const t0 = performance.now();
      execFileSync("btrfs", ["qgroup", "show", "-re", "--raw", "/var/lib/fred-test-btrfs"], {
        stdio: "ignore",
      });
      btrfsMs = Number((performance.now() - t0).toFixed(1));
    } catch {
      btrfsMs = undefined;
    }
    console.log(
      JSON.stringify({
        bench: "usage_sampling_real",
        note: "real engine and cgroup/proc files, no volumes; the qgroup read is timed apart (one btrfs call per pass, wall time)",
        containers: n,
        ...figures,
        btrfs_qgroup_show_wall_ms: btrfsMs,
        goal_cpu_ms_per_pass: GOAL_MS,
        load1: load1(),
      }),
    );
  } finally {
    if (names.length > 0) execFileSync("docker", ["rm", "-f", ...names], { stdio: "ignore" });
  }
}

await synthetic(1_000);
const realCount = Number(process.env.BENCH_USAGE_REAL ?? "20");
if (realCount > 0) await real(realCount);
