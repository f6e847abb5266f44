import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BtrfsVolumes } from "../../../../src/backend/docker/btrfs-volumes.ts";
import { instanceName } from "../../../../src/backend/docker/names.ts";
import { RetainedVolumes } from "../../../../src/backend/docker/retention/retained-volumes.ts";
import { IdShift } from "../../../../src/backend/docker/userns.ts";
import type { InstanceSpec, WorkloadSpec } from "../../../../src/backend/kit/substrate.ts";
import { isFredError } from "../../../../src/core/errors.ts";
import { btrfsSkip, scratchVolumeRoot } from "../../../support/docker.ts";
import { deleteSubvolumes } from "../helpers.ts";

/**
 * The btrfs side of retention at each point a crash can leave it: a snapshot made but the
 * live volume not yet deleted, an adopted snapshot whose owner file still names the
 * source, a second call after success. Every re-run must end in the same state, nothing
 * of another owner is touched, and a root without its identity marker lists nothing.
 */
const skip = btrfsSkip();
const MIB = 1024 * 1024;

describe("retained volumes on btrfs: crash windows", { skip }, () => {
  const storageId = randomUUID();
  let scratch: ReturnType<typeof scratchVolumeRoot>;
  let volumes: BtrfsVolumes;
  let retained: RetainedVolumes;
  const instance = (lease: string, diskMb: number): InstanceSpec => ({
    key: `${lease}-db-0`,
    service: "db",
    index: 0,
    sku: randomUUID(),
    profile: { cpu_cores: 0.1, memory_mb: 32, disk_mb: diskMb },
  });
  const signal = new AbortController().signal;
  /** A live volume of `lease` holding a file of `mb` MiB. */
  const liveWithData = async (lease: string, mb: number) => {
    const dirs = await volumes.ensure(
      instanceName(lease, "db", 0),
      { storageId, leaseUuid: lease },
      64,
      ["data"],
      undefined,
    );
    const dir = dirs.get("data") as string;
    writeFileSync(join(dir, "keep.txt"), "tenant-data\n");
    writeFileSync(join(dir, "fill"), Buffer.alloc(mb * MIB, 7));
    execFileSync("sync");
    return dir;
  };

  before(async () => {
    scratch = scratchVolumeRoot("retained");
    volumes = new BtrfsVolumes(scratch.path, storageId, IdShift.none);
    retained = new RetainedVolumes(volumes, storageId);
    assert.ok((await retained.identity(true))?.startsWith(storageId));
  });
  after(async () => {
    if (!scratch) return;
    await deleteSubvolumes(scratch.path);
    rmSync(scratch.path, { recursive: true, force: true });
  });

  it("retain finishes a close interrupted after the snapshot, and is idempotent", async () => {
    const lease = randomUUID();
    await liveWithData(lease, 3);
    const live = volumes.pathOf(instanceName(lease, "db", 0));
    const copy = join(scratch.path, ".fred-retained", RetainedVolumes.nameOf(lease, "db", 0));
    execFileSync("mkdir", ["-p", join(scratch.path, ".fred-retained")]);
    execFileSync("btrfs", ["subvolume", "snapshot", "-r", live, copy]); // the crash hit here
    const first = await retained.retain(lease, [instance(lease, 64)], signal);
    assert.equal(existsSync(live), false, "the live volume is deleted once copied");
    assert.equal(first.volumes.length, 1);
    assert.ok((first.volumes[0]?.bytes ?? 0) >= 3 * MIB, "measured: the referenced bytes");
    assert.equal(first.fsIdentity, await retained.identity(false));
    const again = await retained.retain(lease, [instance(lease, 64)], signal);
    assert.deepEqual(again, first, "a second call measures the same copy, makes none");
    const inv = await retained.inventory();
    assert.ok(inv.names.has(RetainedVolumes.nameOf(lease, "db", 0)));
  });

  it("adopt finishes an adoption interrupted before the owner rewrite and applies the new limit", async () => {
    const source = randomUUID();
    const target = randomUUID();
    await liveWithData(source, 1);
    const set = await retained.retain(source, [instance(source, 64)], signal);
    const spec = { leaseUuid: target, instances: [instance(target, 32)] } as unknown as WorkloadSpec;
    const targetPath = volumes.pathOf(instanceName(target, "db", 0));
    const copy = join(scratch.path, ".fred-retained", set.volumes[0]?.name ?? "");
    execFileSync("btrfs", ["subvolume", "snapshot", copy, targetPath]); // the crash hit here
    await retained.adopt(source, set.volumes, spec, signal);
    await retained.adopt(source, set.volumes, spec, signal);
    const owner = JSON.parse(readFileSync(join(targetPath, ".fred-owner.json"), "utf8"));
    assert.deepEqual(owner, { storageId, leaseUuid: target, root: { uid: 0, gid: 0 } });
    assert.equal(readFileSync(join(targetPath, "data", "keep.txt"), "utf8"), "tenant-data\n");
    assert.ok(existsSync(copy), "the retained copy stays until the restore commits");
    const limits = execFileSync("btrfs", ["qgroup", "show", "-r", "--raw", scratch.path], {
      encoding: "utf8",
    });
    assert.match(limits, new RegExp(`${32 * MIB}\\s+\\S*${instanceName(target, "db", 0)}`));
  });

  it("never adopts over, nor destroys, another owner's volume", async () => {
    const source = randomUUID();
    const squatter = randomUUID();
    await liveWithData(source, 1);
    const set = await retained.retain(source, [instance(source, 64)], signal);
    await volumes.ensure(
      instanceName(squatter, "db", 0),
      { storageId: randomUUID(), leaseUuid: squatter },
      16,
      [],
      undefined,
    );
    const spec = { leaseUuid: squatter, instances: [instance(squatter, 64)] } as unknown as WorkloadSpec;
    await assert.rejects(retained.adopt(source, set.volumes, spec, signal), (err) =>
      isFredError(err, "ERR_VOLUME_FOREIGN"),
    );
    const names = set.volumes.map((v) => v.name);
    await retained.destroy(randomUUID(), names, signal);
    assert.ok(
      (await retained.inventory()).names.has(names[0] as string),
      "another lease's destroy leaves it",
    );
    await retained.destroy(source, names, signal);
    assert.ok(!(await retained.inventory()).names.has(names[0] as string));
  });

  it("a root without its identity marker lists nothing (an unmounted disk is not empty)", async () => {
    const marker = join(scratch.path, ".fred-volume-root");
    const saved = readFileSync(marker, "utf8");
    rmSync(marker);
    await assert.rejects(retained.inventory());
    writeFileSync(marker, saved);
    assert.equal((await retained.inventory()).fsIdentity, saved.trim());
  });
});
