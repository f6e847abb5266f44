import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import type { InstanceSample, SkuProfile, WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerSkip, engineIdShift, execIn, scratchVolumeRoot } from "../../support/docker.ts";
import { until } from "../../support/index.ts";
import { substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * The Docker backend's usage pass on the real engine (run under the shared Docker lock):
 * memory and CPU limits are the SKU's, a busy loop shows as CPU time near the SKU's cores
 * (the rest throttled), 5 MB written into the volume show in its btrfs qgroup, and
 * network counters come from the container's own namespace.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });
const MiB = 1024 * 1024;

describe("docker substrate: sampleUsage", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("usage");
  const config = substrateConfig(scratch?.path);
  const signal = new AbortController().signal;
  const profile: SkuProfile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  const made: WorkloadSpec[] = [];
  let substrate: DockerSubstrate;

  before(async () => {
    await assertBtrfsWithQuotas(config.volumeDataPath);
    const ids = await engineIdShift();
    substrate = new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log: createLogger("test-docker", "silent"),
      volumes: new BtrfsVolumes(config.volumeDataPath, storageId, ids),
      ids,
    });
  });

  after(async () => {
    for (const s of made) await substrate?.destroyLease(s.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    scratch?.remove();
  });

  async function run(service: Record<string, unknown> & { image: string }): Promise<string> {
    const s = workloadSpec({ storageId, services: { app: service }, profile });
    made.push(s);
    await substrate.validate(s);
    await substrate.create(s, signal);
    await substrate.start(s, signal);
    return s.leaseUuid;
  }

  async function sampleOf(lease: string): Promise<InstanceSample> {
    const sample = (await substrate.sampleUsage(signal)).get(lease)?.[0];
    assert.ok(sample !== undefined, "the running instance is sampled");
    return sample;
  }

  it("reports the SKU's limits, disk writes in the qgroup and network counters", async () => {
    const lease = await run({ image: "fred-test/volume:1" });
    const first = await sampleOf(lease);
    assert.equal(first.service, "app");
    assert.equal(first.index, 0);
    assert.equal(first.memoryLimitBytes, 64 * MiB);
    assert.equal(first.cpuLimitCores, 0.25);
    assert.equal(first.diskQuotaBytes, 16 * MiB);
    assert.ok(first.memoryBytes > 0);
    assert.ok(Number.isInteger(first.networkRxBytes) && Number.isInteger(first.networkTxBytes));
    assert.ok(typeof first.diskBytes === "number");
    assert.equal(first.restarts, 0);
    assert.ok(first.startedAtMs !== undefined && Math.abs(first.startedAtMs - Date.now()) < 120_000);
    const wrote = await execIn(
      instanceName(lease, "app", 0),
      "dd if=/dev/urandom of=/data/blob bs=1M count=5 && sync",
    );
    assert.equal(wrote.code, 0, wrote.out);
    await until(
      async () => ((await sampleOf(lease)).diskBytes as number) >= (first.diskBytes as number) + 5 * MiB,
      "5 MB more in the volume's qgroup",
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  it("a busy loop uses about the SKU's cores and is throttled past them", async () => {
    const lease = await run({ image: "fred-test/volume:1", command: ["sh", "-c", "while :; do :; done"] });
    const a = await sampleOf(lease);
    const t0 = Date.now();
    const b = await until(
      async () => {
        const s = await sampleOf(lease);
        return Date.now() - t0 >= 3_000 ? s : undefined;
      },
      "three seconds of the loop",
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    const cores = (b.cpuUsageSeconds - a.cpuUsageSeconds) / ((Date.now() - t0) / 1000);
    assert.ok(cores > 0.1 && cores < 0.3, `cores ${cores}`);
    assert.ok(b.cpuThrottledSeconds > a.cpuThrottledSeconds, "throttled time grows");
  });
});
