import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate, stopGraceSeconds } from "../../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../../src/backend/docker/engine.ts";
import { instanceName } from "../../../../src/backend/docker/names.ts";
import type { WorkloadSpec } from "../../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { dockerSkip, engineIdShift, execIn, scratchVolumeRoot } from "../../../support/docker.ts";
import { substrateConfig, workloadSpec } from "../substrate-helper.ts";
import { EXITS, held, holdEventLoop, maintenanceSubstrate, VERIFY, VOLUME_APP } from "./harness.ts";

/**
 * Restart and update on the real engine, straight on the substrate: the container is
 * recreated (restart) or replaced by the next release's (update) under the same name, the
 * volume and the file the workload wrote in it stay; a next release that exits, or whose
 * image is missing, is rolled back to the very container that ran before.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });

describe("docker substrate: restart and update", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("maint");
  const signal = new AbortController().signal;
  const profile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  const made: WorkloadSpec[] = [];
  let substrate: DockerSubstrate;
  const release = holdEventLoop();

  /** A running release 1 of `fred-test/volume:1` with tenant data in its volume. */
  async function runningLease(
    env: Record<string, string> = { GEN: "1" },
    extra: Record<string, unknown> = {},
  ): Promise<WorkloadSpec> {
    const spec = workloadSpec({
      storageId,
      services: { app: { ...VOLUME_APP, env, ...extra } },
      profile,
    });
    made.push(spec);
    await substrate.create(spec, signal);
    await substrate.start(spec, signal);
    const write = await execIn(instanceName(spec.leaseUuid, "app", 0), "echo kept > /data/keep.txt && sync");
    assert.equal(write.code, 0, write.out);
    return spec;
  }

  const nextOf = (spec: WorkloadSpec, service: Record<string, unknown>): WorkloadSpec => ({
    ...spec,
    release: spec.release + 1,
    manifest: { services: { app: { ...VOLUME_APP, ...service } } },
  });

  async function readBack(spec: WorkloadSpec, path = "/data/keep.txt; echo; echo $GEN"): Promise<string> {
    const read = await execIn(instanceName(spec.leaseUuid, "app", 0), `cat ${path}`);
    assert.equal(read.code, 0, read.out);
    return read.out;
  }

  before(async () => {
    await assertBtrfsWithQuotas(scratch?.path ?? "");
    substrate = await maintenanceSubstrate(storageId, scratch?.path ?? "");
  });
  after(async () => {
    for (const s of made) await substrate?.destroyLease(s.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    scratch?.remove();
    release();
  });

  it("restart recreates the container from the same spec; the volume's file stays", async () => {
    const spec = await runningLease();
    const [before] = await held(spec.leaseUuid);
    await substrate.restart(spec, signal);
    const now = await held(spec.leaseUuid);
    assert.equal(now.length, 1);
    assert.equal(now[0]?.name, instanceName(spec.leaseUuid, "app", 0));
    assert.equal(now[0]?.release, "1");
    assert.equal(now[0]?.state, "running");
    assert.notEqual(now[0]?.id, before?.id, "a new container");
    assert.equal(await readBack(spec), "kept\n\n1\n");
    const obs = await substrate.inspect(spec.leaseUuid, signal);
    assert.equal(obs?.state, "running");
    assert.equal(obs?.release, 1);
  });

  it("container_stop_timeout is docker stop's grace: with 1s, a workload ignoring SIGTERM restarts promptly", async () => {
    // The same image, without a stop_grace_period of its own: only container_stop_timeout
    // decides how long the engine waits before SIGKILL (Docker's default would be 10 s).
    const config = substrateConfig(scratch?.path, {
      startup_verify_duration: VERIFY,
      container_stop_timeout: "1s",
    });
    const ids = await engineIdShift();
    const quick = new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log: createLogger("test-docker-stop-grace", process.env.TEST_LOG_LEVEL ?? "silent"),
      volumes: new BtrfsVolumes(config.volumeDataPath, storageId, ids),
      ids,
    });
    try {
      const spec = workloadSpec({ storageId, services: { app: { image: VOLUME_APP.image } }, profile });
      made.push(spec);
      await quick.create(spec, signal);
      await quick.start(spec, signal);
      const [before] = await held(spec.leaseUuid);
      const started = Date.now();
      await quick.restart(spec, signal);
      const took = Date.now() - started;
      const now = await held(spec.leaseUuid);
      assert.equal(now[0]?.state, "running");
      assert.notEqual(now[0]?.id, before?.id, "a new container");
      // 1 s of grace, then SIGKILL; the rest is create, start and the 1.5 s verification.
      assert.ok(took < 8_000, `restart took ${took} ms`);
    } finally {
      await quick.close();
    }
  });

  it("update replaces release 1 by release 2 under the same name, sharing the volume", async () => {
    const spec = await runningLease();
    const next = nextOf(spec, { env: { GEN: "2" } });
    await substrate.update(spec, next, signal);
    const now = await held(spec.leaseUuid);
    assert.deepEqual(
      now.map((c) => [c.name, c.release, c.state]),
      [[instanceName(spec.leaseUuid, "app", 0), "2", "running"]],
    );
    assert.equal(await readBack(spec), "kept\n\n2\n");
    const obs = await substrate.inspect(spec.leaseUuid, signal);
    assert.equal(obs?.state, "running");
    assert.equal(obs?.release, 2);
    const info = await substrate.connection(spec.leaseUuid, signal);
    assert.equal((info?.instances as unknown[] | undefined)?.length, 1);
  });

  for (const [what, service, reason] of [
    ["exits during verification", EXITS, "ContainerExited"],
    ["names a missing image", { image: "localhost/fred-test-missing:1" }, "ImagePullFailed"],
  ] as const) {
    it(`an update whose next release ${what} rolls back to the container that ran before`, async () => {
      const spec = await runningLease();
      const [before] = await held(spec.leaseUuid);
      await assert.rejects(substrate.update(spec, nextOf(spec, service), signal), (err: unknown) => {
        const e = err as { outcome?: string; reason?: string; cause?: { reason?: string } };
        assert.equal(e.outcome, "definite", String(err));
        assert.equal(e.reason, "UpdateFailed");
        assert.equal(e.cause?.reason, reason);
        if (service === EXITS) {
          const logs = (err as { logs?: Record<string, string> }).logs;
          assert.match(logs?.["app/0"] ?? "", /giving up/, "the failed attempt's output is kept");
        }
        return true;
      });
      const now = await held(spec.leaseUuid);
      assert.deepEqual(
        now.map((c) => [c.name, c.release, c.state, c.id]),
        [[instanceName(spec.leaseUuid, "app", 0), "1", "running", before?.id]],
        "the same container runs again, under its own name",
      );
      assert.equal(await readBack(spec), "kept\n\n1\n");
      const obs = await substrate.inspect(spec.leaseUuid, signal);
      assert.equal(obs?.state, "running");
      assert.equal(obs?.release, 1);
    });
  }

  it("an update whose rollback fails too is not reported as rolled back (the kit leaves the lease failed)", async () => {
    // Release 1 starts once: started again (as the rollback does), it exits.
    const once = [
      "/bin/sh",
      "-c",
      "[ -f /data/started ] && exit 4; touch /data/started; exec sleep 2147483647",
    ];
    const spec = await runningLease({ GEN: "1" }, { command: once });
    await assert.rejects(substrate.update(spec, nextOf(spec, EXITS), signal), (err: unknown) => {
      const e = err as { outcome?: string; reason?: string };
      assert.equal(e.outcome, "definite", String(err));
      assert.notEqual(e.reason, "UpdateFailed", "only a restored release may say UpdateFailed");
      return true;
    });
    const now = await held(spec.leaseUuid);
    assert.ok(
      now.every((c) => c.release === "1" && c.state !== "running"),
      JSON.stringify(now),
    );
  });
});

describe("docker stop's grace period (t)", () => {
  it("is the service's own stop_grace_period when set, else container_stop_timeout in whole seconds", () => {
    assert.equal(stopGraceSeconds(undefined, 30_000), 30);
    assert.equal(stopGraceSeconds(undefined, 1_000), 1);
    assert.equal(stopGraceSeconds(undefined, 1_500), 2);
    assert.equal(stopGraceSeconds(undefined, 200), 1);
    assert.equal(stopGraceSeconds(5, 30_000), 5);
    assert.equal(stopGraceSeconds(0, 2_000), 2);
  });
});
