import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { FredError } from "../../core/errors.ts";
import type { SqliteDatabase } from "../../sqlite/index.ts";
import { CopyMarks } from "./copy-marks.ts";
import type { PayloadStore } from "./payload-store.ts";
import type { PlacementStore } from "./placement-store.ts";

/**
 * Consistent copies of live stores through SQLite's online backup API
 * (`SqliteDatabase.backup()`), never a file copy: a WAL database's main file alone is not a
 * consistent state. Every copy is a new private file (created 0600 with O_EXCL before
 * SQLite writes into it), so it obeys the same file-identity rules as the store it came
 * from and opens with the same opener (its kind marker is copied with it). A placement
 * copy is then marked as one (CopyMarks.mark): restored, it must be attested.
 */

/** UTC time as a file-name-safe stamp with milliseconds: 20261201T152500123Z. */
export function fileStamp(now: number): string {
  return new Date(now).toISOString().replaceAll(/[-:.]/g, "");
}

/** Copies `source` into the new file `dest` (which must not exist). */
export async function backupTo(source: SqliteDatabase, dest: string): Promise<void> {
  try {
    closeSync(openSync(dest, "wx", 0o600));
  } catch (err) {
    throw new FredError("ERR_SNAPSHOT", `cannot create ${dest}: ${(err as Error).message}`, { cause: err });
  }
  try {
    await source.backup(dest);
  } catch (err) {
    rmSync(dest, { force: true });
    throw new FredError("ERR_SNAPSHOT", `online backup of ${source.path} failed: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * The backup every mutating placement tool takes before it changes anything: beside the
 * store, named `<store>.backup-<stamp>` (`beside`: the file to name it after, for a store
 * with no file of its own, the in-memory copy of one in PostgreSQL). Returns its path.
 */
export async function backupBeside(
  store: PlacementStore,
  now: number,
  beside: string = store.database.path,
): Promise<string> {
  const source = store.database;
  const dest = join(dirname(beside), `${basename(beside)}.backup-${fileStamp(now)}`);
  await backupTo(source, dest);
  CopyMarks.mark(dest, now);
  return dest;
}

export interface SnapshotSet {
  /** The set's directory: `<snapshot dir>/<stamp>`. */
  dir: string;
  at: number;
  files: { placement: string; payload?: string };
  /** Older sets removed to keep `retain`. */
  pruned: string[];
}

export interface SnapshotSources {
  placement: PlacementStore;
  payload?: PayloadStore | undefined;
}

const PARTIAL = ".partial-";

/**
 * One complete snapshot set: both stores copied into a hidden partial directory, which
 * is renamed into place only when every copy succeeded (a crash leaves no half set under
 * a final name). Then the oldest complete sets beyond `retain` are removed.
 */
export async function takeSnapshot(
  dir: string,
  sources: SnapshotSources,
  now: number,
  retain: number,
): Promise<SnapshotSet> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = fileStamp(now);
  const partial = join(dir, `${PARTIAL}${stamp}`);
  const final = join(dir, stamp);
  if (pathExists(final)) throw new FredError("ERR_SNAPSHOT", `snapshot ${final} already exists`);
  mkdirSync(partial, { mode: 0o700 });
  try {
    await backupTo(sources.placement.database, join(partial, "placements.db"));
    CopyMarks.mark(join(partial, "placements.db"), now);
    if (sources.payload !== undefined) await backupTo(sources.payload.database, join(partial, "payloads.db"));
    renameSync(partial, final);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw err;
  }
  const sets = snapshotSets(dir);
  const pruned = sets.slice(0, Math.max(0, sets.length - retain)).map((s) => join(dir, s));
  for (const p of pruned) rmSync(p, { recursive: true, force: true });
  return {
    dir: final,
    at: now,
    files: {
      placement: join(final, "placements.db"),
      ...(sources.payload === undefined ? {} : { payload: join(final, "payloads.db") }),
    },
    pruned,
  };
}

/** Complete set directory names, oldest first (stamps sort as time). */
export function snapshotSets(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^\d{8}T\d{9}Z$/.test(e.name))
    .map((e) => e.name)
    .sort();
}

function pathExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
