import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError } from "../kit/index.ts";
import { ambiguous, classify, engineMessage, isNotFound, withPhase } from "./engine.ts";
import {
  readArchiveTop,
  SEED_FAILED,
  SEED_FAILED_MESSAGE,
  type SeedLimits,
  type SeedTop,
  seedFailed,
  seedTooLarge,
  vetArchive,
} from "./seed-archive.ts";
import type { IdShift } from "./userns.ts";

/**
 * Seeding a fresh durable volume with what the image holds at its VOLUME path, the way the
 * engine fills an empty named volume. The content comes from a helper container that is
 * created from the image but never started, read through the engine's archive API, vetted
 * (seed-archive.ts: images are tenant input) and unpacked by GNU tar as root (numeric
 * owners and modes kept: under userns-remap the archive already holds the remapped host ids).
 *
 * The same helper answers who owns each VOLUME directory in the image (the first header of
 * its archive), which decides the user a container without a manifest `user` runs as.
 */

export type { SeedLimits, SeedTop } from "./seed-archive.ts";

export const DEFAULT_SEED_MAX_ENTRIES = 100_000;

/** Label that tells a seed helper apart from an instance container. */
export const SEED_ROLE_LABEL = "fred.role";
export const SEED_ROLE = "volume-seed";

function isPipeError(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "EPIPE";
}

/**
 * Unpacks an archive from the engine's archive API into `hostDir` (its top directory
 * component stripped), every owner checked against `ids`' map. Returns the image's
 * mode/owner of that top directory (container ids), when present.
 */
export async function extractArchive(
  archive: Readable,
  hostDir: string,
  limits: SeedLimits,
  ids: IdShift,
  signal: AbortSignal,
): Promise<SeedTop | undefined> {
  const vetted = vetArchive(archive, limits, ids);
  const tar = spawn(
    "tar",
    [
      "-x",
      "-f",
      "-",
      "-C",
      hostDir,
      "--numeric-owner",
      "--same-owner",
      "--same-permissions",
      "--strip-components=1",
      "--warning=no-unknown-keyword",
    ],
    { stdio: ["pipe", "ignore", "pipe"] },
  );
  let stderr = "";
  tar.stderr.on("data", (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString("utf8");
  });
  const exited = new Promise<number | null>((resolve) => {
    tar.on("error", () => resolve(null));
    tar.on("close", (code) => resolve(code));
  });
  let streamError: unknown;
  try {
    await pipeline(vetted.output, tar.stdin, { signal });
  } catch (err) {
    streamError = err;
  }
  // A broken pipe means tar stopped reading (it failed): its exit status and message tell why, below.
  if (streamError !== undefined && !isPipeError(streamError)) {
    tar.kill("SIGKILL");
    await exited;
    vetted.output.destroy();
    if (streamError instanceof SubstrateError) throw streamError;
    throw ambiguous("volume seed: reading the image archive", signal.aborted ? signal.reason : streamError);
  }
  const code = await exited;
  if (code !== 0) {
    const what = `volume seed: tar exited with ${code}: ${stderr.trim().split("\n")[0] ?? ""}`;
    if (/quota/i.test(stderr)) throw seedTooLarge(what);
    throw seedFailed(what);
  }
  return vetted.summary.top;
}

/** What an image says about who runs it: its own `USER` and its VOLUME dirs' owners. */
export interface Ownership {
  /** The image's `USER`; "" when it sets none. */
  imageUser: string;
  owners: readonly (SeedTop | undefined)[];
}

export interface VolumeSeederDeps {
  docker: Docker;
  clock: Clock;
  log: Logger;
  /** Ownership labels (managed, storage id, lease, operation, release) for the helpers. */
  labels: Record<string, string>;
  createTimeoutMs: number;
  removeTimeoutMs: number;
  /** Bound on reading and unpacking one VOLUME path. */
  seedTimeoutMs: number;
  /** The engine's id map: archive owners are its host ids. */
  ids: IdShift;
}

/**
 * One seeding pass (one create call): at most one never-started helper container per image,
 * created on first need and removed, with its anonymous volumes, by `close`.
 */
export class VolumeSeeder {
  readonly #deps: VolumeSeederDeps;
  readonly #helpers = new Map<string, string>();
  /** image id → its user and the owner of each VOLUME directory, read once per create. */
  readonly #ownership = new Map<string, Ownership>();

  constructor(deps: VolumeSeederDeps) {
    this.#deps = deps;
  }

  async #helper(imageId: string, signal: AbortSignal): Promise<string> {
    const known = this.#helpers.get(imageId);
    if (known) return known;
    const { docker, clock, labels, createTimeoutMs } = this.#deps;
    const opts = {
      name: `fred-seed-${randomUUID()}`,
      Image: imageId,
      // Never started: the entrypoint only has to satisfy create when the image has none.
      Entrypoint: ["/fred-volume-seed-helper"],
      Cmd: [],
      NetworkDisabled: true,
      Labels: { ...labels, [SEED_ROLE_LABEL]: SEED_ROLE },
      HostConfig: { NetworkMode: "none" },
    };
    try {
      const c = await withPhase(clock, "seed helper create", createTimeoutMs, signal, (s) =>
        docker.createContainer({ ...opts, abortSignal: s } as Docker.ContainerCreateOptions),
      );
      this.#helpers.set(imageId, c.id);
      return c.id;
    } catch (err) {
      throw classify(err, "create volume seed helper", SEED_FAILED, SEED_FAILED_MESSAGE);
    }
  }

  /** Copies the image's content at `containerPath` into `hostDir` (expected empty). */
  async seed(
    imageId: string,
    containerPath: string,
    hostDir: string,
    limits: SeedLimits,
    signal: AbortSignal,
  ): Promise<SeedTop | undefined> {
    const id = await this.#helper(imageId, signal);
    const { docker, clock, seedTimeoutMs, ids } = this.#deps;
    return withPhase(clock, "volume seed", seedTimeoutMs, signal, async (s) => {
      let archive: Readable;
      try {
        archive = (await docker
          .getContainer(id)
          .getArchive({ path: containerPath, abortSignal: s } as { path: string })) as unknown as Readable;
      } catch (err) {
        if (isNotFound(err)) return undefined; // nothing at that path in the image
        throw ambiguous(`archive of ${containerPath}`, err);
      }
      return extractArchive(archive, hostDir, limits, ids, s);
    }).catch((err) => {
      throw err instanceof SubstrateError ? err : ambiguous(`seed ${containerPath}`, err);
    });
  }

  /**
   * Who the image runs as (its `USER`, "" when none) and its mode and owner of each of
   * `paths` (its VOLUME directories), in order; undefined for a path the image does not
   * hold as a directory. Works for every VOLUME path, seeded or not: only the archive's
   * first header is read. Cached by image id.
   */
  async volumeOwnership(imageId: string, paths: readonly string[], signal: AbortSignal): Promise<Ownership> {
    const known = this.#ownership.get(imageId);
    if (known) return known;
    const { docker, clock, seedTimeoutMs, ids } = this.#deps;
    let imageUser: string;
    try {
      const info = await withPhase(clock, "image inspect", seedTimeoutMs, signal, (s) =>
        docker.getImage(imageId).inspect({ abortSignal: s } as object),
      );
      imageUser = info.Config?.User ?? "";
    } catch (err) {
      throw ambiguous(`inspect image ${imageId}`, err);
    }
    const id = await this.#helper(imageId, signal);
    const owners: (SeedTop | undefined)[] = [];
    for (const path of paths) {
      const top = await withPhase(clock, "volume owner", seedTimeoutMs, signal, async (s) => {
        let archive: Readable;
        try {
          archive = (await docker
            .getContainer(id)
            .getArchive({ path, abortSignal: s } as { path: string })) as unknown as Readable;
        } catch (err) {
          if (isNotFound(err)) return undefined;
          throw ambiguous(`archive of ${path}`, err);
        }
        return readArchiveTop(archive, ids);
      }).catch((err) => {
        throw err instanceof SubstrateError ? err : ambiguous(`owner of ${path}`, err);
      });
      owners.push(top);
    }
    const found = { imageUser, owners };
    this.#ownership.set(imageId, found);
    return found;
  }

  /** Removes every helper; a helper that cannot be removed makes the outcome ambiguous. */
  async close(signal: AbortSignal): Promise<void> {
    const { docker, clock, log, removeTimeoutMs } = this.#deps;
    for (const [imageId, id] of this.#helpers) {
      try {
        await withPhase(clock, "seed helper remove", removeTimeoutMs, signal, (s) =>
          docker.getContainer(id).remove({ v: true, force: true, abortSignal: s }),
        );
      } catch (err) {
        if (!isNotFound(err)) {
          log.warn({ container: id, err: engineMessage(err) }, "volume seed helper not removed");
          throw ambiguous(`remove seed helper ${id}`, err);
        }
      }
      this.#helpers.delete(imageId);
    }
  }
}
