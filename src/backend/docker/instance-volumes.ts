import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import { isFredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError, type WorkloadSpec } from "../kit/index.ts";
import type { BtrfsVolumes } from "./btrfs-volumes.ts";
import type { DockerBackendConfig } from "./config.ts";
import { type InstanceMounts, numericOwner } from "./container-spec.ts";
import { ambiguous, definite } from "./engine.ts";
import type { ImageFacts } from "./images.ts";
import { instanceName, LABEL, volumeDirName } from "./names.ts";
import type { ServiceModel } from "./service-model.ts";
import type { IdShift } from "./userns.ts";
import { DEFAULT_SEED_MAX_ENTRIES, type SeedLimits, type SeedTop, VolumeSeeder } from "./volume-seed.ts";

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
  /** The engine's id map (userns-remap): how the image's owners read in archives. */
  ids: IdShift;
  /** A same-named volume of another owner was found (stale-handle accounting). */
  reportForeign: (name: string, leaseUuid: string) => void;
}

/**
 * The user a container without a manifest `user` runs as: `uid:gid` when every VOLUME
 * directory of its image has that same owner and the uid is not 0; otherwise undefined
 * (root). A path the image does not hold as a directory counts as unknown, hence root.
 * Images such as postgres start as root and drop to the data directory's owner, which
 * needs capabilities our containers never have: running as that owner is what works.
 */
export function volumeOwnerUser(
  owners: readonly (Pick<SeedTop, "uid" | "gid"> | undefined)[],
): string | undefined {
  const first = owners[0];
  if (!first || first.uid === 0) return undefined;
  const single = owners.every((o) => o !== undefined && o.uid === first.uid && o.gid === first.gid);
  return single ? `${first.uid}:${first.gid}` : undefined;
}

/** Tenant text of VolumeDeletePending: provider-side and transient, nothing the tenant can hasten. */
export const VOLUME_DELETE_PENDING_MESSAGE =
  "an earlier deletion of this lease's volume is still finishing on the provider; provisioning can succeed once it completes";

export class InstanceVolumes {
  readonly #options: InstanceVolumesOptions;

  constructor(opts: InstanceVolumesOptions) {
    this.#options = opts;
  }

  /** One seeder per create: its helper containers carry the lease's labels. */
  seeder(spec: WorkloadSpec): VolumeSeeder {
    const { docker, clock, log, config, storageId, ids } = this.#options;
    return new VolumeSeeder({
      docker,
      clock,
      log,
      ids,
      labels: {
        [LABEL.managed]: "true",
        [LABEL.storageId]: storageId,
        [LABEL.leaseUuid]: spec.leaseUuid,
        [LABEL.operationId]: spec.operationId,
        [LABEL.release]: String(spec.release),
      },
      createTimeoutMs: config.containerCreateTimeoutMs,
      // A forced remove of the helper: no grace period to wait, only the engine's call.
      removeTimeoutMs: config.containerCreateTimeoutMs,
      seedTimeoutMs: config.provisionTimeoutMs,
    });
  }

  /**
   * The model to run: as given when the manifest sets `user`, the image sets `USER` or
   * declares no VOLUME, else with the user derived from the VOLUME directories' owner (read once per
   * image through the seeder's helper). `mounts` then hands durable directories to it.
   */
  async withRunUser(
    model: ServiceModel,
    facts: ImageFacts,
    seeder: VolumeSeeder,
    signal: AbortSignal,
  ): Promise<ServiceModel> {
    if (model.user !== undefined || facts.volumes.length === 0) return model;
    const { imageUser, owners } = await seeder.volumeOwnership(facts.id, facts.volumes, signal);
    // An image that names its own USER keeps it: the derivation is for images that have none.
    const user = imageUser === "" ? volumeOwnerUser(owners) : undefined;
    if (user === undefined) return model;
    this.#options.log.debug(
      { service: model.name, user },
      "running as the owner of the image's VOLUME directories",
    );
    return { ...model, user };
  }

  async mounts(
    spec: WorkloadSpec,
    instance: WorkloadSpec["instances"][number],
    facts: ImageFacts,
    model: ServiceModel,
    seeder: VolumeSeeder,
    signal: AbortSignal,
  ): Promise<InstanceMounts> {
    const volumes = this.#options.volumes;
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
        { storageId: this.#options.storageId, leaseUuid: spec.leaseUuid },
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
          maxBytes: this.#options.seedLimits.maxBytes ?? diskMb * 1024 * 1024,
          maxEntries: this.#options.seedLimits.maxEntries ?? DEFAULT_SEED_MAX_ENTRIES,
        };
        const top = await seeder.seed(facts.id, path, hostDir, limits, signal);
        await volumes.finishSeed(name, dir, top, chownTo, signal);
      }
      return { durable, ephemeral: [] };
    } catch (err) {
      if (err instanceof SubstrateError) throw err;
      if (isFredError(err, "ERR_VOLUME_FOREIGN")) {
        this.#options.reportForeign(name, spec.leaseUuid);
        throw definite("Internal", "internal error while provisioning", `volume ${name} is not ours`, err);
      }
      if (isFredError(err, "ERR_USERNS_UNMAPPED")) {
        // The manifest's numeric user lies beyond the engine's map: no container can run as it.
        const where = `service ${instance.service} instance ${instance.index}`;
        throw definite("ContainerStartFailed", `${where} could not be started`, `volume ${name}`, err);
      }
      if (isFredError(err, "ERR_VOLUME_DELETE_PENDING")) {
        throw definite("VolumeDeletePending", VOLUME_DELETE_PENDING_MESSAGE, `volume ${name}`, err);
      }
      throw ambiguous(`volume for ${instance.service}/${instance.index}`, err);
    }
  }
}
