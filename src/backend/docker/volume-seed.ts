import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError } from "../kit/substrate.ts";
import { ambiguous, classify, definite, engineMessage, isNotFound, withPhase } from "./engine.ts";

/**
 * Seeding a fresh durable volume with what the image holds at its VOLUME path, the way the
 * engine fills an empty named volume. The content comes from a helper container that is
 * created from the image but never started, read through the engine's archive API and
 * unpacked by GNU tar as root (numeric owners and modes kept). Images are tenant input, so
 * the tar stream is inspected on its way through: entry and byte caps, no absolute or `..`
 * names, no device nodes. Symlinks pointing outside are left to GNU tar, which writes them
 * last (placeholders first), so no later member can be written through one.
 *
 * The same helper answers who owns each VOLUME directory in the image (the first header of
 * its archive), which decides the user a container without a manifest `user` runs as.
 *
 * This file is over 250 lines: the tar header reading has to sit next to the extraction it
 * guards and the owner read that reuses it.
 */

export interface SeedLimits {
  /** Sum of the regular files' sizes. */
  maxBytes: number;
  /** Members of the archive, directories and links included. */
  maxEntries: number;
}

export const DEFAULT_SEED_MAX_ENTRIES = 100_000;

/** Mode and numeric owner of the VOLUME directory itself, as the image has it. */
export interface SeedTop {
  mode: number;
  uid: number;
  gid: number;
}

/** Label that tells a seed helper apart from an instance container. */
export const SEED_ROLE_LABEL = "fred.role";
export const SEED_ROLE = "volume-seed";

const TOO_LARGE = "VolumeSeedTooLarge";
const TOO_LARGE_MESSAGE = "the image's content at a VOLUME path is larger than the volume seed limits allow";
const FAILED = "VolumeSeedFailed";
const FAILED_MESSAGE = "the image's content at a VOLUME path could not be copied into the volume";

const BLOCK = 512;
/** Type flags whose size field announces no data blocks (what GNU tar and Go agree on). */
const HEADER_ONLY = new Set(["1", "2", "3", "4", "5", "6"]);
/** pax (`x`, `g`) and GNU long name/link (`L`, `K`) records: their data is read here. */
const META = new Set(["x", "g", "L", "K"]);
const META_MAX = 64 * 1024;

function padded(size: number): number {
  return Math.ceil(size / BLOCK) * BLOCK;
}

function text(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const nul = field.indexOf(0);
  return field.subarray(0, nul === -1 ? field.length : nul).toString("utf8");
}

/** Octal text, or GNU base-256 when the high bit of the first byte is set. */
function numeric(block: Buffer, start: number, length: number): number {
  const field = block.subarray(start, start + length);
  if (((field[0] ?? 0) & 0x80) !== 0) {
    let value = (field[0] ?? 0) & 0x7f;
    for (const byte of field.subarray(1)) value = value * 256 + byte;
    return value;
  }
  const digits = text(block, start, length).trim();
  return digits === "" ? 0 : Number.parseInt(digits, 8);
}

function checksumOk(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] as number);
  return sum === numeric(block, 148, 8);
}

function unsafeName(name: string): boolean {
  return name.startsWith("/") || name.split("/").includes("..");
}

/** `<len> key=value\n` records of a pax header. */
function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let pos = 0;
  while (pos < data.length) {
    const space = data.indexOf(0x20, pos);
    const length = Number(data.subarray(pos, space).toString("latin1"));
    if (space === -1 || !Number.isInteger(length) || length <= 0 || pos + length > data.length) {
      throw definite(FAILED, FAILED_MESSAGE, "volume seed: malformed pax header");
    }
    const record = data.subarray(space + 1, pos + length - 1).toString("utf8");
    const eq = record.indexOf("=");
    if (eq > 0) out.set(record.slice(0, eq), record.slice(eq + 1));
    pos += length;
  }
  return out;
}

/**
 * Reads tar headers as the bytes pass, enforcing the limits and name rules; `feed` returns
 * what may be forwarded to tar (nothing after the end-of-archive block).
 */
export class TarGuard {
  entries = 0;
  bytes = 0;
  top: SeedTop | undefined;
  ended = false;
  readonly #limits: SeedLimits;
  /** Stop after the first member: only the top directory's header is wanted. */
  readonly #headOnly: boolean;
  #header = Buffer.alloc(0);
  #skip = 0;
  #meta: { type: string; size: number; chunks: Buffer[] } | undefined;
  #pending: { path?: string; linkpath?: string; size?: number } = {};

  constructor(limits: SeedLimits, headOnly = false) {
    this.#limits = limits;
    this.#headOnly = headOnly;
  }

  feed(chunk: Buffer): Buffer {
    if (this.ended) return Buffer.alloc(0);
    let i = 0;
    while (i < chunk.length && !this.ended) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, chunk.length - i);
        this.#meta?.chunks.push(chunk.subarray(i, i + n));
        this.#skip -= n;
        i += n;
        if (this.#skip === 0 && this.#meta) this.#finishMeta(this.#meta);
        continue;
      }
      const n = Math.min(BLOCK - this.#header.length, chunk.length - i);
      this.#header = Buffer.concat([this.#header, chunk.subarray(i, i + n)]);
      i += n;
      if (this.#header.length === BLOCK) {
        const block = this.#header;
        this.#header = Buffer.alloc(0);
        this.#onHeader(block);
      }
    }
    // The first zero block ends the archive for GNU tar too; a second one makes it tidy.
    return this.ended ? Buffer.concat([chunk.subarray(0, i), Buffer.alloc(BLOCK)]) : chunk;
  }

  #onHeader(block: Buffer): void {
    if (block.every((b) => b === 0)) {
      this.ended = true;
      return;
    }
    if (!checksumOk(block)) throw definite(FAILED, FAILED_MESSAGE, "volume seed: bad tar header checksum");
    const type = String.fromCharCode(block[156] as number);
    const headerSize = numeric(block, 124, 12);
    if (META.has(type)) {
      const size = headerSize;
      if (size > META_MAX) throw definite(FAILED, FAILED_MESSAGE, "volume seed: oversized tar meta record");
      this.#meta = { type, size, chunks: [] };
      this.#skip = padded(size);
      if (this.#skip === 0) this.#finishMeta(this.#meta);
      return;
    }
    const ustar = block.subarray(257, 263).toString("latin1") === "ustar\u0000";
    const prefix = ustar ? text(block, 345, 155) : "";
    const name = this.#pending.path ?? (prefix ? `${prefix}/${text(block, 0, 100)}` : text(block, 0, 100));
    const link = this.#pending.linkpath ?? text(block, 157, 100);
    const size = this.#pending.size ?? headerSize;
    this.#pending = {};
    if (++this.entries > this.#limits.maxEntries) {
      throw definite(
        TOO_LARGE,
        TOO_LARGE_MESSAGE,
        `volume seed: more than ${this.#limits.maxEntries} entries`,
      );
    }
    if (unsafeName(name) || (type === "1" && unsafeName(link))) {
      throw definite(FAILED, FAILED_MESSAGE, `volume seed: unsafe member name ${JSON.stringify(name)}`);
    }
    if (type === "3" || type === "4") {
      throw definite(FAILED, FAILED_MESSAGE, `volume seed: device node ${JSON.stringify(name)} refused`);
    }
    const data = HEADER_ONLY.has(type) ? 0 : size;
    this.bytes += data;
    if (this.bytes > this.#limits.maxBytes) {
      throw definite(TOO_LARGE, TOO_LARGE_MESSAGE, `volume seed: more than ${this.#limits.maxBytes} bytes`);
    }
    if (this.entries === 1 && type === "5") {
      this.top = {
        mode: numeric(block, 100, 8) & 0o7777,
        uid: numeric(block, 108, 8),
        gid: numeric(block, 116, 8),
      };
    }
    if (this.#headOnly) {
      this.ended = true;
      return;
    }
    this.#skip = padded(data);
  }

  #finishMeta(meta: { type: string; size: number; chunks: Buffer[] }): void {
    this.#meta = undefined;
    const data = Buffer.concat(meta.chunks).subarray(0, meta.size);
    if (meta.type === "L" || meta.type === "K") {
      const value = data.subarray(0, data.indexOf(0) === -1 ? data.length : data.indexOf(0)).toString("utf8");
      if (meta.type === "L") this.#pending.path = value;
      else this.#pending.linkpath = value;
      return;
    }
    const records = paxRecords(data);
    if (meta.type === "g") {
      if (records.has("path") || records.has("linkpath") || records.has("size")) {
        throw definite(FAILED, FAILED_MESSAGE, "volume seed: global pax header naming members refused");
      }
      return;
    }
    const path = records.get("path");
    const linkpath = records.get("linkpath");
    const size = records.get("size");
    if (path !== undefined) this.#pending.path = path;
    if (linkpath !== undefined) this.#pending.linkpath = linkpath;
    if (size !== undefined) {
      if (!/^\d+$/.test(size)) throw definite(FAILED, FAILED_MESSAGE, "volume seed: bad pax size");
      this.#pending.size = Number(size);
    }
  }
}

function isPipeError(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "EPIPE";
}

/**
 * Unpacks an archive from the engine's archive API into `hostDir` (its top directory
 * component stripped). Returns the image's mode/owner of that top directory, when present.
 */
export async function extractArchive(
  archive: Readable,
  hostDir: string,
  limits: SeedLimits,
  signal: AbortSignal,
): Promise<SeedTop | undefined> {
  const guard = new TarGuard(limits);
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
  const filter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      try {
        done(null, guard.feed(chunk));
      } catch (err) {
        done(err as Error);
      }
    },
  });
  let streamError: unknown;
  try {
    await pipeline(archive, filter, tar.stdin, { signal });
  } catch (err) {
    streamError = err;
  }
  // A broken pipe means tar stopped reading (it failed, or the archive ended): its exit
  // status and message tell which, below.
  if (streamError !== undefined && !isPipeError(streamError)) {
    tar.kill("SIGKILL");
    await exited;
    if (streamError instanceof SubstrateError) throw streamError;
    throw ambiguous("volume seed: reading the image archive", signal.aborted ? signal.reason : streamError);
  }
  const code = await exited;
  if (code !== 0 || !guard.ended) {
    const detail = stderr.trim().split("\n")[0] ?? "";
    const what = `volume seed: tar exited with ${code}${guard.ended ? "" : " (archive truncated)"}: ${detail}`;
    if (/quota/i.test(stderr)) throw definite(TOO_LARGE, TOO_LARGE_MESSAGE, what);
    throw definite(FAILED, FAILED_MESSAGE, what);
  }
  return guard.top;
}

/**
 * Reads only as far as the archive's first member (the top directory) and drops the rest
 * of the stream: the image's mode and owner of that directory, when it is one.
 */
export async function readArchiveTop(archive: Readable): Promise<SeedTop | undefined> {
  const guard = new TarGuard({ maxBytes: Number.MAX_SAFE_INTEGER, maxEntries: 1 }, true);
  try {
    for await (const chunk of archive) {
      guard.feed(chunk as Buffer);
      if (guard.ended) break;
    }
  } finally {
    archive.destroy();
  }
  return guard.top;
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
      throw classify(err, "create volume seed helper", FAILED, FAILED_MESSAGE);
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
    const { docker, clock, seedTimeoutMs } = this.#deps;
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
      return extractArchive(archive, hostDir, limits, s);
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
    const { docker, clock, seedTimeoutMs } = this.#deps;
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
        return readArchiveTop(archive);
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
