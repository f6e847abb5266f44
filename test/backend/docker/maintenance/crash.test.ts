import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { assertBtrfsWithQuotas } from "../../../../src/backend/docker/btrfs-volumes.ts";
import type { DockerSubstrate } from "../../../../src/backend/docker/docker-substrate.ts";
import type { DockerCrashPoint } from "../../../../src/backend/docker/maintenance/index.ts";
import { asideName, instanceName } from "../../../../src/backend/docker/names.ts";
import type { WorkloadSpec } from "../../../../src/backend/kit/substrate.ts";
import { dockerSkip, execIn, scratchVolumeRoot } from "../../../support/docker.ts";
import { workloadSpec } from "../substrate-helper.ts";
import {
  type CrashCall,
  EXITS,
  held,
  holdEventLoop,
  maintenanceSubstrate,
  runUntilCrash,
  VOLUME_APP,
} from "./harness.ts";

/**
 * The kill -9 matrix on the substrate: a child process runs a restart or an update and is
 * SIGKILLed at one step; the state it leaves is checked, then the same call is made again
 * (what the kit does after its restart) and must end on exactly one release, running
 * under the instance name, with no other container of the lease and the file the
 * workload wrote before still in its volume.
 */
const skip = await dockerSkip({ btrfs: true, images: ["volume"] });

type Case = {
  point: DockerCrashPoint;
  op: "restart" | "update" | "bad-update";
  /** Names, releases and states the crash leaves (L = the lease). */
  left: (lease: string) => [string, string, string][];
};

const canonical = (l: string) => instanceName(l, "app", 0);
const aside = (l: string) => asideName(l, "app", 0, 1);

const CASES: Case[] = [
  { point: "docker.restart.begin", op: "restart", left: (l) => [[canonical(l), "1", "running"]] },
  {
    point: "docker.restart.after-stop",
    op: "restart",
    left: (l) => [
      [canonical(l), "1", "created"],
      [aside(l), "1", "exited"],
    ],
  },
  { point: "docker.restart.after-start", op: "restart", left: (l) => [[canonical(l), "1", "running"]] },
  { point: "docker.update.begin", op: "update", left: (l) => [[canonical(l), "1", "running"]] },
  {
    point: "docker.update.after-stop",
    op: "update",
    left: (l) => [
      [canonical(l), "2", "created"],
      [aside(l), "1", "exited"],
    ],
  },
  {
    point: "docker.update.after-start",
    op: "update",
    left: (l) => [
      [canonical(l), "2", "running"],
      [aside(l), "1", "exited"],
    ],
  },
  { point: "docker.update.in-rollback", op: "bad-update", left: (l) => [[aside(l), "1", "exited"]] },
];

describe("docker substrate: kill -9 at each step of a restart and an update", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("crash");
  const signal = new AbortController().signal;
  const profile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  const made: WorkloadSpec[] = [];
  let substrate: DockerSubstrate;
  const release = holdEventLoop();

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

  for (const c of CASES) {
    it(`${c.point}: the call made again ends on one release with the data in place`, async () => {
      const spec = workloadSpec({
        storageId,
        services: { app: { ...VOLUME_APP, env: { GEN: "1" } } },
        profile,
      });
      made.push(spec);
      await substrate.create(spec, signal);
      await substrate.start(spec, signal);
      const write = await execIn(canonical(spec.leaseUuid), "echo kept > /data/keep.txt && sync");
      assert.equal(write.code, 0, write.out);

      const next: WorkloadSpec = {
        ...spec,
        release: 2,
        manifest: {
          services: { app: { ...VOLUME_APP, env: { GEN: "2" }, ...(c.op === "bad-update" ? EXITS : {}) } },
        },
      };
      const call: CrashCall =
        c.op === "restart" ? { op: "restart", spec } : { op: "update", current: spec, next };
      const crashed = await runUntilCrash(storageId, scratch?.path ?? "", c.point, call);
      assert.equal(crashed.end, "killed", crashed.out);
      const left = await held(spec.leaseUuid);
      assert.deepEqual(
        left.map((h) => [h.name, h.release, h.state]),
        c.left(spec.leaseUuid),
      );

      const again =
        c.op === "restart" ? substrate.restart(spec, signal) : substrate.update(spec, next, signal);
      if (c.op === "bad-update") {
        await assert.rejects(again, (err: unknown) => (err as { reason?: string }).reason === "UpdateFailed");
      } else {
        await again;
      }
      const want = c.op === "update" ? "2" : "1";
      const end = await held(spec.leaseUuid);
      assert.deepEqual(
        end.map((h) => [h.name, h.release, h.state]),
        [[canonical(spec.leaseUuid), want, "running"]],
        "exactly one container: the instance of one release",
      );
      const read = await execIn(canonical(spec.leaseUuid), "cat /data/keep.txt; echo $GEN");
      assert.equal(read.out, `kept\n${want}\n`);
      const obs = await substrate.inspect(spec.leaseUuid, signal);
      assert.equal(obs?.state, "running");
      assert.equal(obs?.release, Number(want));
    });
  }
});
