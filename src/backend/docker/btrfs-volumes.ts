import { execFile } from "node:child_process";
import {
  chmod,
  chown,
  lchown,
  lstat,
  mkdir,
  readdir,
  readFile,
  rm,
  stat,
  statfs,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { FredError } from "../../core/errors.ts";
import type { IdShift, Owner } from "./userns.ts";

/**
 * Durable instance volumes with an enforced size: one btrfs subvolume per service
 * instance under `volume_data_path`, limited by a qgroup to the SKU's `disk_mb`, with one
 * sub-directory per image VOLUME path (those are what containers see). The subvolume root
 * holds an owner file naming the storage id and lease, checked before anything is deleted,
 * so two deployments pointed at one directory can never delete each other's data.
 *
 * Seeding from the image: before a VOLUME directory is first created, a marker file
 * `.fred-seed-<dir>` saying "pending" is written next to the owner file; it turns "done"
 * only once the image's content is unpacked and synced. A pending marker means a crash hit
 * mid-seed: the directory is emptied and seeded again. A directory without a marker (made
 * before seeding existed) or with "done" is never seeded over: that is tenant data.
 *
 * Ownership: every owner given here is a container uid:gid; `ids` turns it into the host
 * ids the engine maps it to (userns-remap), so the tenant's root, or the container user,
 * owns its VOLUME directories and nothing else under the subvolume. The owner file records
 * container root's host ids (`root`, absent = 0:0: made on an engine without remapping);
 * a volume whose record differs from the engine's current map (remapping switched on since,
 * or a retained copy restored after the switch) has every file's owner moved to the current
 * map before it is used, so the same container users own the same files.
 *
 * Deleting: a `.fred-deleting` marker is written before `subvolume delete` starts. A delete
 * that fails (or is cut short by a crash) leaves it behind, and `ensure` never hands such a
 * half-deleted volume to a new provision (ERR_VOLUME_DELETE_PENDING) until a later close
 * finishes the deletion.
 */

const BTRFS_MAGIC = 0x9123683e;
export const OWNER_FILE = ".fred-owner.json";
const SEED_PENDING = "pending";
const SEED_DONE = "done";
const DELETING_MARKER = ".fred-deleting";
const BTRFS_CALL_TIMEOUT_MS = 60_000;

export interface VolumeOwner {
  storageId: string;
  leaseUuid: string;
  /** Container root's host ids when the files were last owned; absent = 0:0. */
  root?: Owner;
}

/** One `btrfs` CLI call, bounded in time; the first stderr line becomes the error text. */
export function run(args: string[], signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "btrfs",
      args,
      { timeout: BTRFS_CALL_TIMEOUT_MS, ...(signal ? { signal } : {}), maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          const detail = String(stderr || err.message)
            .trim()
            .split("\n")[0];
          reject(new FredError("ERR_BTRFS", `btrfs ${args[0]} ${args[1] ?? ""}: ${detail}`, { cause: err }));
        } else resolve(stdout);
      },
    );
  });
}

/**
 * Refuses a data path that cannot enforce sizes: it must be on btrfs with quotas enabled.
 * Creates the directory when missing (its parent must already be the btrfs mount).
 */
export async function assertBtrfsWithQuotas(root: string): Promise<void> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const fs = await statfs(root);
  if (fs.type !== BTRFS_MAGIC) {
    throw new FredError(
      "ERR_VOLUME_FILESYSTEM",
      `volume_data_path ${root} is not on btrfs (filesystem magic 0x${fs.type.toString(16)}); ` +
        "disk sizes cannot be enforced. Mount a btrfs file system there with quotas enabled " +
        "(btrfs quota enable <mount>), or set volume_filesystem: none to refuse disk-bearing SKUs",
    );
  }
  try {
    await run(["qgroup", "show", root]);
  } catch (err) {
    throw new FredError(
      "ERR_VOLUME_FILESYSTEM",
      `volume_data_path ${root} is on btrfs but quotas are not enabled; run: btrfs quota enable <mount>`,
      { cause: err },
    );
  }
}

function isOwner(value: unknown): value is Owner {
  const o = value as Owner | undefined;
  return Number.isSafeInteger(o?.uid) && Number.isSafeInteger(o?.gid);
}

/** The owner file of the subvolume at `path`, when it is readable and well-formed. */
export async function ownerAt(path: string): Promise<VolumeOwner | undefined> {
  try {
    const parsed = JSON.parse(await readFile(join(path, OWNER_FILE), "utf8")) as VolumeOwner;
    return typeof parsed.storageId === "string" && typeof parsed.leaseUuid === "string" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export class BtrfsVolumes {
  readonly root: string;
  readonly #storageId: string;
  /** Container ids → host ids: what seeding and every chown here go through. */
  readonly ids: IdShift;

  constructor(root: string, storageId: string, ids: IdShift) {
    this.root = root;
    this.#storageId = storageId;
    this.ids = ids;
  }

  /** Hands `hostDir` to the container's `owner`, as the engine maps it onto the host. */
  async #chown(hostDir: string, owner: Owner): Promise<void> {
    const host = this.ids.toHost(owner);
    await chown(hostDir, host.uid, host.gid);
  }

  pathOf(name: string): string {
    return join(this.root, name);
  }

  #owner(name: string): Promise<VolumeOwner | undefined> {
    return ownerAt(this.pathOf(name));
  }

  async #exists(name: string): Promise<boolean> {
    try {
      return (await stat(this.pathOf(name))).isDirectory();
    } catch {
      return false;
    }
  }

  /**
   * Creates (or re-uses, after a crash) the instance's subvolume with a `diskMb` limit and
   * one directory per VOLUME path, owned by the numeric container user `chownTo`, else by
   * container root (host root only when the engine does not remap).
   * Returns the host directory for each VOLUME path. A same-named volume owned by another
   * lease or deployment is never adopted.
   */
  async ensure(
    name: string,
    owner: VolumeOwner,
    diskMb: number,
    dirs: readonly string[],
    chownTo: Owner | undefined,
    signal?: AbortSignal,
  ): Promise<Map<string, string>> {
    const path = this.pathOf(name);
    if (await this.#exists(name)) {
      const found = await this.#owner(name);
      if (found && (found.storageId !== owner.storageId || found.leaseUuid !== owner.leaseUuid)) {
        throw new FredError("ERR_VOLUME_FOREIGN", `volume ${name} belongs to another lease or deployment`);
      }
      if (await this.deletionPending(name)) {
        throw new FredError("ERR_VOLUME_DELETE_PENDING", `volume ${name} is still being deleted`);
      }
    } else {
      await run(["subvolume", "create", path], signal);
    }
    await run(["qgroup", "limit", `${diskMb}M`, path], signal);
    await this.settle(path, owner);
    const out = new Map<string, string>();
    for (const dir of dirs) {
      const hostDir = join(path, dir);
      if (!(await this.#isDir(hostDir))) await writeFile(this.#seedMarker(name, dir), SEED_PENDING);
      await mkdir(hostDir, { recursive: true, mode: 0o755 });
      if (chownTo || this.ids.remapped) await this.#chown(hostDir, chownTo ?? { uid: 0, gid: 0 });
      out.set(dir, hostDir);
    }
    return out;
  }

  /**
   * Writes the owner file of the subvolume at `path`, first moving its files to the current
   * id map when the previous owner file recorded another container root. A crash midway
   * leaves the old record, and the move runs again: an owner already moved lies outside the
   * old map's offset range (or below it) and is left as it is.
   */
  async settle(path: string, owner: VolumeOwner): Promise<void> {
    const recorded = (await ownerAt(path))?.root;
    const before = isOwner(recorded) ? recorded : { uid: 0, gid: 0 };
    const now = this.ids.root;
    if (before.uid !== now.uid || before.gid !== now.gid) await this.#moveOwners(path, before);
    const record: VolumeOwner = { storageId: owner.storageId, leaseUuid: owner.leaseUuid, root: now };
    await writeFile(join(path, OWNER_FILE), JSON.stringify(record), { mode: 0o600 });
  }

  /**
   * Every entry under the subvolume (its VOLUME directories and their content, not the
   * bookkeeping files beside them): the container id an owner stood for under the old root
   * (host id minus the old root's) is given its host id under the current map. Ids below
   * the old root, or beyond the current map, were no container's and stay as they are.
   * Symlinks are changed themselves, never followed.
   */
  async #moveOwners(path: string, oldRoot: Owner): Promise<void> {
    const moved = (kind: "uid" | "gid", id: number, base: number): number | undefined => {
      if (id < base) return undefined;
      try {
        return this.ids.hostId(kind, id - base);
      } catch {
        return undefined;
      }
    };
    const visit = async (entry: string): Promise<void> => {
      const st = await lstat(entry);
      const uid = moved("uid", st.uid, oldRoot.uid);
      const gid = moved("gid", st.gid, oldRoot.gid);
      if (uid !== undefined || gid !== undefined) await lchown(entry, uid ?? st.uid, gid ?? st.gid);
      if (st.isDirectory()) for (const child of await readdir(entry)) await visit(join(entry, child));
    };
    for (const top of await readdir(path)) {
      if (top.startsWith(".fred-")) continue;
      await visit(join(path, top));
    }
  }

  /** Whether an earlier deletion of this volume began and has not finished. */
  async deletionPending(name: string): Promise<boolean> {
    try {
      await stat(join(this.pathOf(name), DELETING_MARKER));
      return true;
    } catch {
      return false;
    }
  }

  #seedMarker(name: string, dir: string): string {
    return join(this.pathOf(name), `.fred-seed-${dir}`);
  }

  async #isDir(path: string): Promise<boolean> {
    try {
      return (await stat(path)).isDirectory();
    } catch {
      return false;
    }
  }

  /** Whether `dir` still waits for (or was interrupted in) its seeding from the image. */
  async needsSeed(name: string, dir: string): Promise<boolean> {
    try {
      return (await readFile(this.#seedMarker(name, dir), "utf8")) === SEED_PENDING;
    } catch {
      return false;
    }
  }

  /** Empties a directory whose seeding must start over (nothing is followed out of it). */
  async clearForSeed(name: string, dir: string): Promise<void> {
    const hostDir = join(this.pathOf(name), dir);
    for (const entry of await readdir(hostDir)) {
      await rm(join(hostDir, entry), { recursive: true, force: true });
    }
  }

  /**
   * Finishes a seed: the directory takes the image's mode, and the numeric container user
   * (`chownTo`) as owner when the manifest names one, else the image's owner. The data is
   * synced to disk before the marker says "done".
   */
  async finishSeed(
    name: string,
    dir: string,
    top: (Owner & { mode: number }) | undefined,
    chownTo: Owner | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    const hostDir = join(this.pathOf(name), dir);
    if (top) await chmod(hostDir, top.mode);
    const owner = chownTo ?? top;
    if (owner) await this.#chown(hostDir, owner);
    await run(["filesystem", "sync", this.pathOf(name)], signal);
    await writeFile(this.#seedMarker(name, dir), SEED_DONE);
  }

  /**
   * Deletes the instance's subvolume and its qgroup. Absent = done. A subvolume whose owner
   * file names another storage id or lease is left alone and reported (returns false).
   */
  async destroy(name: string, expected: VolumeOwner, signal?: AbortSignal): Promise<boolean> {
    if (!(await this.#exists(name))) return true;
    const found = await this.#owner(name);
    if (!found || found.storageId !== expected.storageId || found.leaseUuid !== expected.leaseUuid)
      return false;
    const id = await this.#subvolumeId(name, signal);
    // Best effort: a volume at its quota may refuse even an empty file, and the delete must go on.
    await writeFile(join(this.pathOf(name), DELETING_MARKER), "").catch(() => {});
    await run(["subvolume", "delete", "--commit-after", this.pathOf(name)], signal);
    // The kernel usually drops the qgroup with the subvolume; clear it explicitly when not.
    if (id !== undefined) await run(["qgroup", "destroy", `0/${id}`, this.root], signal).catch(() => {});
    return true;
  }

  async #subvolumeId(name: string, signal?: AbortSignal): Promise<number | undefined> {
    const text = await run(["subvolume", "show", this.pathOf(name)], signal).catch(() => "");
    const m = /Subvolume ID:\s+(\d+)/.exec(text);
    return m ? Number(m[1]) : undefined;
  }

  /** Names of `fred-*` volumes owned by this deployment, with their lease. */
  async list(): Promise<{ name: string; leaseUuid: string }[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch {
      return [];
    }
    const out: { name: string; leaseUuid: string }[] = [];
    for (const name of names.filter((n) => n.startsWith("fred-")).sort()) {
      const owner = await this.#owner(name);
      if (owner?.storageId === this.#storageId) out.push({ name, leaseUuid: owner.leaseUuid });
    }
    return out;
  }
}
