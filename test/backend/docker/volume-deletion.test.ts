import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import { type SkuProfile, SubstrateError, type WorkloadSpec } from "../../../src/backend/kit/index.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerSkip, engineIdShift, scratchVolumeRoot } from "../../support/docker.ts";
import { substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * A volume deletion that does not finish, on the real engine and a real btrfs: a nested
 * subvolume inside the lease's volume makes `btrfs subvolume delete` fail, as a held
 * deletion would. The close's teardown then fails with VolumeDeletionInProgress (its
 * containers already gone), a provision of the same lease finds the half-deleted volume
 * and fails definitely with VolumeDeletePending (the volume is never handed out again),
 * and once the obstacle is gone the next teardown deletes it.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });

describe("docker substrate: a volume deletion that has not finished", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("deletion");
  const config = substrateConfig(scratch?.path);
  const signal = new AbortController().signal;
  const durable: SkuProfile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  let substrate: DockerSubstrate;
  let spec: WorkloadSpec;
  let volumePath: string;
  const obstacle = () => join(volumePath, "held");

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
    spec = workloadSpec({ storageId, services: { app: { image: "fred-test/volume:1" } }, profile: durable });
    volumePath = join(config.volumeDataPath, instanceName(spec.leaseUuid, "app", 0));
  });

  after(async () => {
    if (existsSync(obstacle())) execFileSync("btrfs", ["subvolume", "delete", obstacle()]);
    await substrate?.destroyLease(spec.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    scratch?.remove();
  });

  it("a failed volume delete is VolumeDeletionInProgress, with no btrfs text for the tenant", async () => {
    await substrate.validate(spec);
    await substrate.create(spec, signal);
    await substrate.start(spec, signal);
    assert.ok(existsSync(volumePath), "the instance has its volume");
    execFileSync("btrfs", ["subvolume", "create", obstacle()]);

    const err = await substrate.destroyLease(spec.leaseUuid, signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof SubstrateError, String(err));
    assert.equal(err.reason, "VolumeDeletionInProgress");
    assert.equal(err.outcome, "ambiguous");
    assert.doesNotMatch(err.tenantMessage, /btrfs|\/var|subvolume/);
    const left = (await substrate.inventory(signal)).filter((o) => o.leaseUuid === spec.leaseUuid);
    assert.deepEqual(
      left.flatMap((o) => o.instances),
      [],
      "its containers went first",
    );
    assert.ok(existsSync(volumePath), "the volume is still there");
  });

  it("a provision of the same lease meanwhile fails definitely with VolumeDeletePending", async () => {
    const again = { ...spec, operationId: randomUUID(), release: 2 };
    const err = await substrate.create(again, signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof SubstrateError, String(err));
    assert.equal(err.reason, "VolumeDeletePending");
    assert.equal(err.outcome, "definite");
    assert.match(err.tenantMessage, /still finishing/);
    await substrate.removeWorkload(spec.leaseUuid, signal);
  });

  it("once the obstacle is gone the next teardown deletes the volume", async () => {
    execFileSync("btrfs", ["subvolume", "delete", obstacle()]);
    await substrate.destroyLease(spec.leaseUuid, signal);
    assert.equal(existsSync(volumePath), false, "the volume is gone");
  });
});
