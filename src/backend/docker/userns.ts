import { readFile } from "node:fs/promises";
import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { engineMessage, withPhase } from "./engine.ts";

/**
 * Who container root is on the host. With Docker's user-namespace remapping
 * (`userns-remap`) the engine runs every container in a user namespace whose uid 0 is an
 * unprivileged host uid: the start of the remap user's subordinate range in /etc/subuid
 * (gids likewise from /etc/subgid). Files the backend puts into a tenant's volume (the
 * directories it makes, the image content it seeds) must carry the host ids that the
 * container's ids map to, or the tenant's root could not write its own volume. `IdShift`
 * is that translation, both ways, the one place it is computed; without remapping it is
 * the identity. (The engine's archive API, which seeding reads, reports the image's files
 * with the host ids they have in the remapped image store: `toContainer` turns those back
 * into the ids the image names.)
 *
 * The engine says whether it remaps (`docker info` SecurityOptions holds `name=userns`) and
 * which host ids container root has (its data root ends in `/<uid>.<gid>`); the ranges
 * behind that root come from /etc/subuid and /etc/subgid, the files dockerd reads.
 */

/** Container ids [container, container+size) are host ids [host, host+size). */
export interface IdRange {
  container: number;
  host: number;
  size: number;
}

export interface Owner {
  uid: number;
  gid: number;
}

/** A container id outside every mapped range: the engine itself could not run it. */
export function unmapped(kind: "uid" | "gid", id: number): FredError {
  return new FredError(
    "ERR_USERNS_UNMAPPED",
    `container ${kind} ${id} is outside the engine's user-namespace map`,
  );
}

function toHost(ranges: readonly IdRange[], kind: "uid" | "gid", id: number): number {
  for (const r of ranges) {
    if (id >= r.container && id < r.container + r.size) return r.host + (id - r.container);
  }
  throw unmapped(kind, id);
}

function toContainer(ranges: readonly IdRange[], kind: "uid" | "gid", id: number): number {
  for (const r of ranges) {
    if (id >= r.host && id < r.host + r.size) return r.container + (id - r.host);
  }
  throw new FredError("ERR_USERNS_UNMAPPED", `host ${kind} ${id} is outside the engine's user-namespace map`);
}

export class IdShift {
  /** The engine does not remap: container ids are host ids. */
  static readonly none = new IdShift(undefined);

  readonly #map: { uids: readonly IdRange[]; gids: readonly IdRange[] } | undefined;

  constructor(map: { uids: readonly IdRange[]; gids: readonly IdRange[] } | undefined) {
    this.#map = map;
  }

  get remapped(): boolean {
    return this.#map !== undefined;
  }

  /** The host uid:gid a container uid:gid is; throws ERR_USERNS_UNMAPPED outside the map. */
  toHost(owner: Owner): Owner {
    return { uid: this.hostId("uid", owner.uid), gid: this.hostId("gid", owner.gid) };
  }

  /** One container id's host id; throws ERR_USERNS_UNMAPPED outside the map. */
  hostId(kind: "uid" | "gid", id: number): number {
    if (!this.#map) return id;
    return toHost(kind === "uid" ? this.#map.uids : this.#map.gids, kind, id);
  }

  /** The container uid:gid a host uid:gid is; throws ERR_USERNS_UNMAPPED outside the map. */
  toContainer(owner: Owner): Owner {
    if (!this.#map) return owner;
    return {
      uid: toContainer(this.#map.uids, "uid", owner.uid),
      gid: toContainer(this.#map.gids, "gid", owner.gid),
    };
  }

  /** Container root's host ids (0:0 without remapping). */
  get root(): Owner {
    return this.toHost({ uid: 0, gid: 0 });
  }
}

/** One `name:start:count` line of /etc/subuid or /etc/subgid. */
export interface SubIdEntry {
  user: string;
  start: number;
  count: number;
}

const ID_SPACE = 2 ** 32;

/**
 * Parses a subordinate-id file. Blank lines and `#` comments are skipped; a line that is
 * not `name:start:count` with decimal numbers, a positive count and a range inside the
 * 32-bit id space is returned in `bad` (1-based line numbers) instead of guessed at.
 */
export function parseSubIds(text: string): { entries: SubIdEntry[]; bad: number[] } {
  const entries: SubIdEntry[] = [];
  const bad: number[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([^:\s]+):(\d{1,10}):(\d{1,10})$/.exec(line);
    const start = Number(m?.[2]);
    const count = Number(m?.[3]);
    if (!m || count === 0 || start + count > ID_SPACE) {
      bad.push(i + 1);
      continue;
    }
    entries.push({ user: m[1] as string, start, count });
  }
  return { entries, bad };
}

/**
 * The ranges of the remap user whose lowest subordinate id is `rootHostId`, laid end to end
 * from container id 0 in ascending host order (as dockerd builds its map). The remap
 * user's name is not reported by the engine; the range that starts at container root's
 * host id names it. Throws when no range starts there, or when a line of the file is bad
 * (dockerd would not have started on a file it could not read the same way).
 */
export function rangesFor(text: string, file: string, rootHostId: number): IdRange[] {
  const { entries, bad } = parseSubIds(text);
  if (bad.length > 0)
    throw new FredError("ERR_USERNS", `${file}: line ${bad.join(", ")} is not name:start:count`);
  const owner = entries.find((e) => e.start === rootHostId);
  if (!owner)
    throw new FredError(
      "ERR_USERNS",
      `the engine maps container root to host id ${rootHostId}, but no range in ${file} starts there`,
    );
  const own = entries.filter((e) => e.user === owner.user).sort((a, b) => a.start - b.start);
  if (own[0]?.start !== rootHostId)
    throw new FredError(
      "ERR_USERNS",
      `${file}: user ${owner.user} has a range below ${rootHostId}, where the engine maps container root`,
    );
  const ranges: IdRange[] = [];
  let next = 0;
  for (const e of own) {
    ranges.push({ container: next, host: e.start, size: e.count });
    next += e.count;
  }
  return ranges;
}

/** What `docker info` says about remapping: undefined when the engine does not remap. */
export function engineRemapRoot(info: {
  SecurityOptions?: unknown;
  DockerRootDir?: unknown;
}): Owner | undefined {
  const options = Array.isArray(info.SecurityOptions) ? info.SecurityOptions : [];
  if (!options.some((o) => typeof o === "string" && o.split(",").includes("name=userns"))) return undefined;
  const root = typeof info.DockerRootDir === "string" ? info.DockerRootDir : "";
  const m = /\/(\d+)\.(\d+)\/?$/.exec(root);
  if (!m)
    throw new FredError(
      "ERR_USERNS",
      `the engine remaps user namespaces but its data root ${JSON.stringify(root)} does not end in /<uid>.<gid>`,
    );
  return { uid: Number(m[1]), gid: Number(m[2]) };
}

export const USERNS_HOWTO =
  'set "userns-remap": "default" in /etc/docker/daemon.json and restart dockerd ' +
  "(images are pulled again into the remapped data root)";

/** The WARN a development backend logs on an engine without remapping (a constant message). */
export const USERNS_WARNING =
  "the Docker engine does not remap user namespaces: root in a tenant container is root on the host";

/** The startup decision on an engine: fine, a WARN (development) or a refusal (production_mode). */
export function usernsVerdict(
  remapped: boolean,
  productionMode: boolean,
  dockerHost: string,
): { ok: true } | { warn: string } | { refuse: string } {
  if (remapped) return { ok: true };
  if (!productionMode) return { warn: USERNS_WARNING };
  return {
    refuse:
      `production_mode requires userns-remap: the Docker engine at ${dockerHost} does not remap user namespaces, ` +
      `so root in a tenant container is root on the host; ${USERNS_HOWTO}`,
  };
}

export interface IdFiles {
  subuid: string;
  subgid: string;
}

export const SYSTEM_ID_FILES: IdFiles = { subuid: "/etc/subuid", subgid: "/etc/subgid" };

/** The shift for an engine whose `docker info` is `info`, reading the subordinate-id files. */
export async function idShiftOf(
  info: { SecurityOptions?: unknown; DockerRootDir?: unknown },
  files: IdFiles = SYSTEM_ID_FILES,
): Promise<IdShift> {
  const root = engineRemapRoot(info);
  if (root === undefined) return IdShift.none;
  const read = (path: string) =>
    readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
      throw new FredError(
        "ERR_USERNS",
        `the engine remaps user namespaces but ${path} cannot be read (${err.code ?? err.message}); ` +
          "the backend must run on the engine's host",
      );
    });
  return new IdShift({
    uids: rangesFor(await read(files.subuid), files.subuid, root.uid),
    gids: rangesFor(await read(files.subgid), files.subgid, root.gid),
  });
}

const ENGINE_INFO_TIMEOUT_MS = 10_000;

/** The two fields of `docker info` read here. */
type EngineInfo = { SecurityOptions?: unknown; DockerRootDir?: unknown };

/**
 * Asks the engine whether it remaps and builds the shift; `production_mode` refuses an
 * engine that does not remap (ERR_USERNS), development logs a WARN and runs on.
 */
export async function engineIdShift(
  docker: Docker,
  opts: { dockerHost: string; productionMode: boolean; clock: Clock; log: Logger; files?: IdFiles },
  signal?: AbortSignal,
): Promise<IdShift> {
  let info: EngineInfo;
  try {
    info = await withPhase(opts.clock, "engine info", ENGINE_INFO_TIMEOUT_MS, signal, (s) =>
      // dockerode takes an abort signal here too; its types only know the callback form.
      (docker as unknown as { info(o: { abortSignal: AbortSignal }): Promise<EngineInfo> }).info({
        abortSignal: s,
      }),
    );
  } catch (err) {
    throw new FredError(
      "ERR_DOCKER_UNREACHABLE",
      `docker engine at ${opts.dockerHost} does not answer docker info: ${engineMessage(err)}`,
    );
  }
  const ids = await idShiftOf(info, opts.files);
  const verdict = usernsVerdict(ids.remapped, opts.productionMode, opts.dockerHost);
  if ("refuse" in verdict) throw new FredError("ERR_USERNS", verdict.refuse);
  if ("warn" in verdict)
    opts.log.warn(
      { docker_host: opts.dockerHost, fix: USERNS_HOWTO, production_mode: "refuses to start without it" },
      verdict.warn,
    );
  else
    opts.log.info(
      { container_root: ids.root },
      "user namespaces remapped: container root is an unprivileged host user",
    );
  return ids;
}
