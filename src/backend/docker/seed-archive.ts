import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import tarStream, { type Header } from "tar-stream";
import { SubstrateError } from "../kit/index.ts";
import { definite } from "./engine.ts";
import type { IdShift } from "./userns.ts";

/**
 * The tar archive a volume seed reads from a tenant's image, vetted before GNU tar unpacks
 * it as root. tar-stream parses the archive (checksums, pax and GNU long names, base-256
 * numbers) and every member is checked: entry and byte caps, no absolute or `..` names
 * (hard link targets included), no device nodes, no member type we do not know. What
 * reaches GNU tar is a new archive tar-stream writes from the checked headers alone, so
 * GNU tar never parses a header byte of the tenant's: where two tar parsers disagree about
 * a malformed header (where a member starts, what a size field holds), nothing slips past.
 * Symlink targets are left to GNU tar, which writes links pointing outside last. Owners:
 * the engine's archive holds the host ids the files have in its image store, which under
 * userns-remap lie inside the remap range; an owner outside it (a real host user) refuses
 * the seed, and the ids reported for the VOLUME directory are the container's (the image's
 * own view), which decide who the container runs as.
 */

export interface SeedLimits {
  /** Sum of the regular files' sizes. */
  maxBytes: number;
  /** Members of the archive, directories and links included. */
  maxEntries: number;
}

/** Mode and numeric owner (container ids) of the VOLUME directory itself, as the image has it. */
export interface SeedTop {
  mode: number;
  uid: number;
  gid: number;
}

export const SEED_TOO_LARGE = "VolumeSeedTooLarge";
const TOO_LARGE_MESSAGE = "the image's content at a VOLUME path is larger than the volume seed limits allow";
export const SEED_FAILED = "VolumeSeedFailed";
export const SEED_FAILED_MESSAGE = "the image's content at a VOLUME path could not be copied into the volume";

export function seedTooLarge(operatorMessage: string, cause?: unknown): SubstrateError {
  return definite(SEED_TOO_LARGE, TOO_LARGE_MESSAGE, operatorMessage, cause);
}

export function seedFailed(operatorMessage: string, cause?: unknown): SubstrateError {
  return definite(SEED_FAILED, SEED_FAILED_MESSAGE, operatorMessage, cause);
}

/** What the vetting saw; final once the vetted output has ended. */
export interface SeedSummary {
  entries: number;
  bytes: number;
  /** The first member, when it is a directory: the VOLUME directory itself. */
  top: SeedTop | undefined;
}

/** What tar-stream's pack takes: the name and any other header fields. */
type PackHeader = Partial<Header> & Pick<Header, "name">;

const KINDS = new Set(["file", "contiguous-file", "link", "symlink", "directory", "fifo"]);
const WITH_DATA = new Set(["file", "contiguous-file"]);
const EMPTY = Buffer.alloc(0);
/** Largest uid/gid the ustar field tar-stream writes holds (6 octal digits); beyond, pax. */
const USTAR_ID_MAX = 0o777777;
/**
 * tar-stream's pack swaps a zero mode for its default (0644/0755); a bit above the
 * permission bits, masked off when the header is written, keeps a 0000 mode as it is.
 */
const KEEP_MODE = 0o100000;

function unsafeName(name: string): boolean {
  return name.startsWith("/") || name.split("/").includes("..");
}

function count(value: unknown, field: string): number {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return value;
  throw seedFailed(`volume seed: bad ${field} field in a tar header`);
}

/** A pax `uid`/`gid` record (used beyond the ustar field's range) wins over the field. */
function paxId(pax: unknown, key: "uid" | "gid"): number | undefined {
  const text = (pax as Record<string, string> | null | undefined)?.[key];
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : undefined;
}

/**
 * Checks one member against the caps and rules, counts it in `seen`, and returns the
 * header to write for it (nothing of the original beyond what is checked here). Its owner
 * must be a host id of `ids`' map; `seen.top` holds the container ids it stands for.
 */
export function vetMember(h: Header, seen: SeedSummary, limits: SeedLimits, ids: IdShift): PackHeader {
  if (++seen.entries > limits.maxEntries) {
    throw seedTooLarge(`volume seed: more than ${limits.maxEntries} entries`);
  }
  const name = h.name;
  if (unsafeName(name) || (h.type === "link" && unsafeName(h.linkname ?? ""))) {
    throw seedFailed(`volume seed: unsafe member name ${JSON.stringify(name)}`);
  }
  if (h.type === "character-device" || h.type === "block-device") {
    throw seedFailed(`volume seed: device node ${JSON.stringify(name)} refused`);
  }
  if (!KINDS.has(h.type as string)) {
    throw seedFailed(`volume seed: member ${JSON.stringify(name)} of an unsupported type`);
  }
  const size = WITH_DATA.has(h.type as string) ? count(h.size, "size") : 0;
  seen.bytes += size;
  if (seen.bytes > limits.maxBytes) {
    throw seedTooLarge(`volume seed: more than ${limits.maxBytes} bytes`);
  }
  const mode = count(h.mode, "mode") & 0o7777;
  const uid = paxId(h.pax, "uid") ?? count(h.uid, "uid");
  const gid = paxId(h.pax, "gid") ?? count(h.gid, "gid");
  const inContainer = containerOwner(ids, uid, gid, name);
  if (seen.entries === 1 && h.type === "directory") seen.top = { mode, ...inContainer };
  const mtimeMs = h.mtime?.getTime() ?? 0;
  const out: PackHeader = {
    name,
    type: h.type === "contiguous-file" ? "file" : h.type,
    size,
    mode: mode | KEEP_MODE,
    uid,
    gid,
    mtime: new Date(Number.isFinite(mtimeMs) && mtimeMs > 0 ? mtimeMs : 0),
  };
  if (h.type === "link" || h.type === "symlink") out.linkname = h.linkname ?? "";
  if (uid > USTAR_ID_MAX || gid > USTAR_ID_MAX) out.pax = { uid: String(uid), gid: String(gid) };
  return out;
}

/** The container ids a member's (host) owner stands for; an owner outside the map refuses the seed. */
function containerOwner(ids: IdShift, uid: number, gid: number, name: string) {
  try {
    return ids.toContainer({ uid, gid });
  } catch (err) {
    throw seedFailed(
      `volume seed: owner ${uid}:${gid} of ${JSON.stringify(name)} is outside the user-namespace map`,
      err,
    );
  }
}

/** A parse error of tar-stream is the archive's fault; a failure of the input is not. */
function malformed(err: unknown, inputError: unknown): unknown {
  if (err instanceof SubstrateError || err === inputError) return err;
  return seedFailed("volume seed: malformed archive", err);
}

function newSummary(): SeedSummary {
  return { entries: 0, bytes: 0, top: undefined };
}

/**
 * The vetted archive as a stream, and the summary it fills. The stream fails with a
 * definite `SubstrateError` when the archive breaks a rule or does not parse, and with the
 * input's own error when reading the input fails. Destroying it stops reading the input.
 * Owners are written as the archive has them, once checked against `ids`' map.
 */
export function vetArchive(
  input: Readable,
  limits: SeedLimits,
  ids: IdShift,
): { output: Readable; summary: SeedSummary } {
  const summary = newSummary();
  const extract = tarStream.extract();
  const pack = tarStream.pack();
  let inputError: unknown;
  input.once("error", (err) => {
    inputError = err;
  });
  // Failures reach the reader through `output`; streamx also emits them as events.
  pack.on("error", () => {});
  extract.on("error", () => {});
  const fail = (err: unknown) => pack.destroy(err as Error);
  extract.on("entry", (header, body, next) => {
    // An entry's body and sink fail with the whole archive, which `output` reports.
    body.on("error", () => {});
    let out: PackHeader;
    try {
      out = vetMember(header, summary, limits, ids);
    } catch (err) {
      fail(err);
      return;
    }
    const done = (err?: Error | null) => (err ? fail(err) : next());
    if (out.size === 0) {
      // Whatever a data-less member claims to carry is read and dropped. A directory's
      // body never ends in tar-stream (its size field is not data), so do not wait for it.
      body.resume();
      pack.entry(out, EMPTY, done);
      return;
    }
    const sink = pack.entry(out, done);
    sink.on("error", () => {});
    body.pipe(sink);
  });
  pipeline(input, extract).then(
    () => pack.finalize(),
    (err) => fail(err),
  );
  pack.on("close", () => {
    extract.destroy();
    input.destroy();
  });
  // Every failure, whichever stream saw it first, is classified once, here.
  async function* relay(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of pack) yield chunk as Buffer;
    } catch (err) {
      throw malformed(err, inputError);
    }
  }
  return { output: Readable.from(relay()), summary };
}

/**
 * Reads only the archive's first member (the top directory) and drops the rest: the
 * image's mode and owner (container ids, through `ids`) of that directory, when it is one.
 */
export async function readArchiveTop(input: Readable, ids: IdShift): Promise<SeedTop | undefined> {
  const extract = tarStream.extract();
  let inputError: unknown;
  input.once("error", (err) => {
    inputError = err;
  });
  extract.on("error", () => {}); // reaches the loop below; streamx also emits it as an event
  const feeding = pipeline(input, extract).catch(() => {}); // cut short on purpose below
  const summary = newSummary();
  try {
    for await (const entry of extract) {
      vetMember(entry.header, summary, { maxBytes: Number.MAX_SAFE_INTEGER, maxEntries: 1 }, ids);
      return summary.top;
    }
    return undefined;
  } catch (err) {
    throw malformed(err, inputError);
  } finally {
    input.destroy();
    extract.destroy();
    await feeding;
  }
}
