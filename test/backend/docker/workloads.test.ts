import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { IdShift } from "../../../src/backend/docker/userns.ts";
import type { WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerCli, dockerSkip, engineIdShift, execIn, scratchVolumeRoot } from "../../support/docker.ts";
import { substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * Real workloads on the real engine, checked from the outside (HTTP on the reported port)
 * and from the inside (`docker exec`): tenant isolation, enforced disk size, read-only
 * root, no capabilities, SKU limits.
 */
const skip = await dockerSkip({ btrfs: true, images: ["httpd", "volume"] });

describe("docker substrate: real workloads", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("workloads");
  const config = substrateConfig(scratch?.path, { container_pids_limit: 64 });
  const signal = new AbortController().signal;
  let substrate: DockerSubstrate;
  const made: WorkloadSpec[] = [];
  const tenantA = `manifest1a${randomUUID().slice(0, 8)}`;
  const tenantB = `manifest1b${randomUUID().slice(0, 8)}`;
  let webA: WorkloadSpec;
  let webA2: WorkloadSpec;
  let webB: WorkloadSpec;
  let disk: WorkloadSpec;

  async function run(spec: WorkloadSpec): Promise<WorkloadSpec> {
    made.push(spec);
    await substrate.validate(spec);
    await substrate.create(spec, signal);
    await substrate.start(spec, signal);
    return spec;
  }

  const httpd = { image: "fred-test/httpd:1", ports: { "8080/tcp": {} } };

  before(async () => {
    await assertBtrfsWithQuotas(config.volumeDataPath);
    const ids = await engineIdShift();
    substrate = new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log: createLogger("test-docker", "warn"),
      volumes: new BtrfsVolumes(config.volumeDataPath, storageId, ids),
      ids,
    });
    [webA, webA2, webB, disk] = await Promise.all([
      run(workloadSpec({ storageId, tenant: tenantA, services: { web: httpd } })),
      run(workloadSpec({ storageId, tenant: tenantA, services: { web: httpd } })),
      run(workloadSpec({ storageId, tenant: tenantB, services: { web: httpd } })),
      run(
        workloadSpec({
          storageId,
          services: { store: { image: "fred-test/volume:1" } },
          profile: { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 },
        }),
      ),
    ]);
  });

  after(async () => {
    for (const spec of made) await substrate?.destroyLease(spec.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    scratch?.remove();
  });

  const container = (spec: WorkloadSpec, service = "web") => instanceName(spec.leaseUuid, service, 0);
  const ipOf = async (spec: WorkloadSpec) => {
    const r = await dockerCli([
      "inspect",
      "-f",
      "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
      container(spec),
    ]);
    assert.equal(r.code, 0, r.out);
    return r.out.trim();
  };

  it("the httpd answers on the host port /info reports", async () => {
    const info = await substrate.connection(webA.leaseUuid, signal);
    assert.ok(info, "running lease has connection info");
    assert.equal(info.host, "127.0.0.1");
    const port = info.ports?.["8080/tcp"];
    assert.ok(port, JSON.stringify(info));
    assert.equal(port.host_ip, "127.0.0.1");
    assert.match(port.host_port, /^\d+$/);
    const res = await fetch(`http://127.0.0.1:${port.host_port}/`);
    assert.equal(res.status, 200);
    assert.equal((await res.text()).trim(), "fred-test-httpd");
  });

  it("a container reaches its own lease's address, not another lease's: of tenant B, or of its own tenant", async () => {
    const own = await execIn(container(webA), `timeout 5 wget -q -O- http://${await ipOf(webA)}:8080/`);
    assert.equal(own.code, 0, `the control (its own lease's address) must succeed: ${own.out}`);
    assert.match(own.out, /fred-test-httpd/);
    for (const [what, other] of [
      ["tenant B's lease", webB],
      ["another lease of tenant A", webA2],
    ] as const) {
      const cross = await execIn(container(webA), `timeout 5 wget -q -O- http://${await ipOf(other)}:8080/`);
      assert.notEqual(cross.code, 0, `a request to ${what} must fail: ${cross.out}`);
      assert.doesNotMatch(cross.out, /fred-test-httpd/);
    }
  });

  it("writes past disk_mb fail inside the container with 'Disk quota exceeded'", async () => {
    const c = container(disk, "store");
    const small = await execIn(c, "dd if=/dev/zero of=/data/small bs=1M count=4 && sync && echo wrote");
    assert.equal(small.code, 0, small.out);
    const big = await execIn(c, "dd if=/dev/zero of=/data/big bs=1M count=32; sync; echo rc=$?");
    assert.match(big.out, /Disk quota exceeded/);
  });

  it("the root filesystem is read-only while /tmp is writable", async () => {
    const root = await execIn(container(webA), "touch /rootfs-write-test");
    assert.notEqual(root.code, 0);
    assert.match(root.out, /Read-only file system/);
    const tmp = await execIn(container(webA), "touch /tmp/ok && echo tmp-ok");
    assert.equal(tmp.code, 0, tmp.out);
  });

  it("every capability is dropped and privileges cannot be gained (checked from inside)", async () => {
    const status = await execIn(
      container(webA),
      "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status",
    );
    assert.equal(status.code, 0, status.out);
    assert.match(status.out, /CapEff:\s+0000000000000000/);
    assert.match(status.out, /CapPrm:\s+0000000000000000/);
    assert.match(status.out, /CapBnd:\s+0000000000000000/);
    assert.match(status.out, /NoNewPrivs:\s+1/);
    const chown = await execIn(container(webA), "chown 1000 /tmp/ok 2>&1 || echo refused");
    assert.match(chown.out, /refused|not permitted/);
  });

  it("applies the SKU limits and the pids limit", async () => {
    const r = await dockerCli([
      "inspect",
      "-f",
      "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}} {{.HostConfig.RestartPolicy.Name}}",
      container(webA),
    ]);
    assert.equal(r.out.trim(), `250000000 ${64 * 1024 * 1024} ${64 * 1024 * 1024} 64 no`);
    const mem = await execIn(
      container(webA),
      "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max",
    );
    assert.equal(mem.out.trim(), String(64 * 1024 * 1024));
  });

  it("reports per-instance logs and a running inventory", async () => {
    const logs = await substrate.logs(disk.leaseUuid, 10, signal);
    assert.deepEqual(Object.keys(logs), ["store/0"]);
    assert.match(logs["store/0"] ?? "", /volume ready/);
    const inventory = await substrate.inventory(signal);
    for (const spec of [webA, webA2, webB, disk]) {
      const obs = inventory.find((o) => o.leaseUuid === spec.leaseUuid);
      assert.equal(obs?.state, "running", spec.leaseUuid);
      assert.equal(obs?.operationId, spec.operationId);
    }
  });

  it("never adopts or deletes a volume whose owner file names another deployment", async () => {
    const spec = workloadSpec({
      storageId,
      services: { store: { image: "fred-test/volume:1" } },
      profile: { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 },
    });
    const name = instanceName(spec.leaseUuid, "store", 0);
    const other = new BtrfsVolumes(config.volumeDataPath, randomUUID(), IdShift.none);
    await other.ensure(name, { storageId: "someone-else", leaseUuid: spec.leaseUuid }, 16, ["d"], undefined);
    made.push(spec);
    await substrate.validate(spec);
    await assert.rejects(
      substrate.create(spec, signal),
      (err: Error & { outcome?: string }) => err.outcome === "definite",
    );
    await substrate.destroyLease(spec.leaseUuid, signal);
    const still = await dockerCli([
      "run",
      "--rm",
      "-v",
      `${config.volumeDataPath}:/v:ro`,
      "fred-test/httpd:1",
      "ls",
      "/v",
    ]);
    assert.match(still.out, new RegExp(name), "the foreign volume is left in place");
    assert.equal(await other.destroy(name, { storageId: "someone-else", leaseUuid: spec.leaseUuid }), true);
  });

  it("removeWorkload removes the containers and keeps the volume's data for the next release", async () => {
    const c = container(disk, "store");
    // The quota test above filled the volume: make room first.
    const write = await execIn(c, "rm -f /data/big && echo kept > /data/keep && sync");
    assert.equal(write.code, 0, write.out);
    await substrate.removeWorkload(disk.leaseUuid, signal);
    await substrate.removeWorkload(disk.leaseUuid, signal);
    assert.equal((await dockerCli(["inspect", c])).code, 1, "the container is gone");
    const left = await substrate.inspect(disk.leaseUuid, signal);
    assert.deepEqual(
      left,
      { leaseUuid: disk.leaseUuid, state: "partial", instances: [] },
      "the volume is still there",
    );
    const next = { ...disk, operationId: randomUUID(), release: 2 };
    await substrate.create(next, signal);
    await substrate.start(next, signal);
    const read = await execIn(c, "cat /data/keep");
    assert.equal(read.out, "kept\n");
  });

  it("destroy removes containers and the volume and is idempotent", async () => {
    const volume = instanceName(disk.leaseUuid, "store", 0);
    await substrate.destroyLease(disk.leaseUuid, signal);
    await substrate.destroyLease(disk.leaseUuid, signal);
    assert.equal(await substrate.inspect(disk.leaseUuid, signal), undefined);
    assert.equal((await dockerCli(["inspect", volume])).code, 1);
    const ls = await dockerCli([
      "run",
      "--rm",
      "-v",
      `${config.volumeDataPath}:/v:ro`,
      "fred-test/httpd:1",
      "ls",
      "/v",
    ]);
    assert.doesNotMatch(ls.out, new RegExp(volume));
  });
});
