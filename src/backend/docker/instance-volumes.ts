import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import { isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError, type WorkloadSpec } from "../kit/substrate.ts";
import type { BtrfsVolumes } from "./btrfs-volumes.ts";
import type { DockerBackendConfig } from "./config.ts";
import { type InstanceMounts, numericOwner } from "./container-spec.ts";
import { ambiguous, definite } from "./engine.ts";
import type { ImageFacts } from "./images.ts";
import { instanceName, LABEL, volumeDirName } from "./names.ts";
import type { ServiceModel } from "./service-model.ts";
import { DEFAULT_SEED_MAX_ENTRIES, type SeedLimits, VolumeSeeder } from "./volume-seed.ts";

/**
 * What an instance container mounts at its image's VOLUME paths: with a disk-bearing SKU
 * and a btrfs volume root, one quota-limited subvolume per instance (a directory per
 * path, seeded from the image on first use); otherwise tmpfs at those paths.
 */
export interface InstanceVolumesOptions {
  docker: Docker;
  clock: Clock;
  log: Logger;
  config: DockerBackendConfig;
  storageId: string;
  /** Absent when `volume_filesystem: none` (no durable disk is offered). */
  volumes: BtrfsVolumes | undefined;
  /** Caps on seeding: bytes default to the SKU's `disk_mb`, entries to 100,000. */
  seedLimits: Partial<SeedLimits>;
  /** A same-named volume of another owner was found (stale-handle accounting). */
  reportForeign: (name: string, leaseUuid: string) => void;
}

export class InstanceVolumes {
  readonly #o: InstanceVolumesOptions;

  constructor(opts: InstanceVolumesOptions) {
    this.#o = opts;
  }

  /** One seeder per create: its helper containers carry the lease's labels. */
  seeder(spec: WorkloadSpec): VolumeSeeder {
    const { docker, clock, log, config, storageId } = this.#o;
    return new VolumeSeeder({
      docker,
      clock,
      log,
      labels: {
        [LABEL.managed]: "true",
        [LABEL.storageId]: storageId,
        [LABEL.leaseUuid]: spec.leaseUuid,
        [LABEL.operationId]: spec.operationId,
        [LABEL.release]: String(spec.release),
      },
      createTimeoutMs: config.containerCreateTimeoutMs,
      removeTimeoutMs: config.containerStopTimeoutMs,
      seedTimeoutMs: config.provisionTimeoutMs,
    });
  }

  async mounts(
    spec: WorkloadSpec,
    instance: WorkloadSpec["instances"][number],
    facts: ImageFacts,
    model: ServiceModel,
    seeder: VolumeSeeder,
    signal: AbortSignal,
  ): Promise<InstanceMounts> {
    const volumes = this.#o.volumes;
    const diskMb = instance.profile.disk_mb;
    if (diskMb <= 0 || facts.volumes.length === 0 || !volumes) {
      return { durable: new Map(), ephemeral: facts.volumes };
    }
    const dirs = facts.volumes.map(volumeDirName);
    const name = instanceName(spec.leaseUuid, instance.service, instance.index);
    const chownTo = numericOwner(model.user);
    try {
      const hostDirs = await volumes.ensure(
        name,
        { storageId: this.#o.storageId, leaseUuid: spec.leaseUuid },
        diskMb,
        dirs,
        chownTo,
        signal,
      );
      const durable = new Map<string, string>();
      for (const [i, path] of facts.volumes.entries()) {
        const dir = dirs[i] as string;
        const hostDir = hostDirs.get(dir) as string;
        durable.set(path, hostDir);
        if (!(await volumes.needsSeed(name, dir))) continue;
        await volumes.clearForSeed(name, dir);
        const limits: SeedLimits = {
          maxBytes: this.#o.seedLimits.maxBytes ?? diskMb * 1024 * 1024,
          maxEntries: this.#o.seedLimits.maxEntries ?? DEFAULT_SEED_MAX_ENTRIES,
        };
        const top = await seeder.seed(facts.id, path, hostDir, limits, signal);
        await volumes.finishSeed(name, dir, top, chownTo, signal);
      }
      return { durable, ephemeral: [] };
    } catch (err) {
      if (err instanceof SubstrateError) throw err;
      if (isFredError(err, "ERR_VOLUME_FOREIGN")) {
        this.#o.reportForeign(name, spec.leaseUuid);
        throw definite("Internal", "internal error while provisioning", `volume ${name} is not ours`, err);
      }
      throw ambiguous(`volume for ${instance.service}/${instance.index}`, err);
    }
  }
}
