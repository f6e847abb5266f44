import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { volumeOwnerUser } from "../../../src/backend/docker/instance-volumes.ts";
import { instanceName } from "../../../src/backend/docker/names.ts";
import type { SkuProfile, WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { createLogger } from "../../../src/log.ts";
import { dockerCli, dockerSkip, engineIdShift, execIn, scratchVolumeRoot } from "../../support/docker.ts";
import { seedHelpersLeft, substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * Without a manifest `user`, a container runs as the single non-root owner of its image's
 * VOLUME directories (as the image has them), else as root; a manifest `user` always wins.
 * The decision on its own, then the real engine with `fred-test/owned:1` (/data owned by
 * 1000:1000), `fred-test/owned-split:1` (/data and /srv of two owners) and
 * `fred-test/volume:1` (/data owned by root), on durable and on tmpfs VOLUME paths; an
 * image's own USER (`fred-test/owned-user:1`) is kept.
 */

describe("volumeOwnerUser", () => {
  const o = (uid: number, gid: number) => ({ uid, gid });

  it("one non-root owner of every directory becomes uid:gid", () => {
    assert.equal(volumeOwnerUser([o(999, 999)]), "999:999");
    assert.equal(volumeOwnerUser([o(1000, 1000), o(1000, 1000)]), "1000:1000");
    assert.equal(volumeOwnerUser([o(1000, 0)]), "1000:0", "a root group alone is not root");
  });

  it("root, mixed owners, an unknown owner or no directories leave the user unset", () => {
    assert.equal(volumeOwnerUser([o(0, 0)]), undefined);
    assert.equal(volumeOwnerUser([o(0, 1000)]), undefined);
    assert.equal(volumeOwnerUser([o(1000, 1000), o(1001, 1001)]), undefined);
    assert.equal(volumeOwnerUser([o(1000, 1000), o(1000, 1001)]), undefined, "same uid, other gid");
    assert.equal(volumeOwnerUser([o(1000, 1000), undefined]), undefined);
    assert.equal(volumeOwnerUser([undefined, o(1000, 1000)]), undefined);
    assert.equal(volumeOwnerUser([]), undefined);
  });
});

const skip = await dockerSkip({ btrfs: true, images: ["owned", "owned-split", "owned-user", "volume"] });

describe("docker substrate: running as the VOLUME directories' owner", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("owner");
  const config = substrateConfig(scratch?.path);
  const signal = new AbortController().signal;
  const durable: SkuProfile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  const ephemeral: SkuProfile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 0 };
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

  /** Provisions one `app` service and returns its container's name. */
  async function run(service: Record<string, unknown> & { image: string }, profile: SkuProfile) {
    const s = workloadSpec({ storageId, services: { app: service }, profile });
    made.push(s);
    await substrate.validate(s);
    await substrate.create(s, signal);
    await substrate.start(s, signal);
    return instanceName(s.leaseUuid, "app", 0);
  }

  /** Config.User as created, and the ids a process inside actually has. */
  async function identity(container: string): Promise<{ configured: string; ids: string }> {
    const inspect = await dockerCli(["inspect", "--format", "{{.Config.User}}", container]);
    assert.equal(inspect.code, 0, inspect.out);
    const ids = await execIn(container, "echo $(id -u):$(id -g)");
    assert.equal(ids.code, 0, ids.out);
    return { configured: inspect.out.trim(), ids: ids.out.trim() };
  }

  const helpersLeft = () => seedHelpersLeft(storageId);

  it("durable disk: runs as 1000:1000 and can write its seeded /data", async () => {
    const c = await run({ image: "fred-test/owned:1" }, durable);
    assert.deepEqual(await identity(c), { configured: "1000:1000", ids: "1000:1000" });
    const w = await execIn(c, "echo kept > /data/probe && stat -c '%u:%g' /data /data/probe");
    assert.equal(w.out, "1000:1000\n1000:1000\n");
    assert.equal(await helpersLeft(), "", "the helper container is gone");
  });

  it("tmpfs VOLUME path (disk_mb 0): runs as 1000:1000 all the same", async () => {
    const c = await run({ image: "fred-test/owned:1" }, ephemeral);
    assert.deepEqual(await identity(c), { configured: "1000:1000", ids: "1000:1000" });
    const mounts = await execIn(c, "grep ' /data ' /proc/mounts");
    assert.match(mounts.out, /^tmpfs \/data tmpfs/);
    assert.equal(await helpersLeft(), "", "the owner-read helper is gone too");
  });

  it("VOLUME directories owned by root: runs as root", async () => {
    const c = await run({ image: "fred-test/volume:1" }, durable);
    assert.deepEqual(await identity(c), { configured: "", ids: "0:0" });
  });

  it("two VOLUME directories with different owners: runs as root", async () => {
    const c = await run({ image: "fred-test/owned-split:1" }, ephemeral);
    assert.deepEqual(await identity(c), { configured: "", ids: "0:0" });
  });

  it("an image that sets its own USER keeps it", async () => {
    const c = await run({ image: "fred-test/owned-user:1" }, ephemeral);
    assert.deepEqual(await identity(c), { configured: "1001:1001", ids: "1001:1001" });
  });

  it("a manifest user wins over the derived one and owns the durable directory", async () => {
    const c = await run({ image: "fred-test/owned:1", user: "2000:2000" }, durable);
    assert.deepEqual(await identity(c), { configured: "2000:2000", ids: "2000:2000" });
    const r = await execIn(c, "stat -c '%u:%g' /data");
    assert.equal(r.out, "2000:2000\n");
  });
});
