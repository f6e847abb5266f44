import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, stat, statfs, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KeyedMutex } from "../../../core/async/index.ts";
import { FredError } from "../../../core/errors.ts";
import type {
  InstanceSpec,
  RetainedInventory,
  RetainedSet,
  RetainedVolume,
  WorkloadSpec,
} from "../../kit/index.ts";
import { retentionCrashPoint } from "../../kit/index.ts";
import { type BtrfsVolumes, run as btrfs, ownerAt, type VolumeOwner } from "../btrfs-volumes.ts";
import { instanceName } from "../names.ts";

/**
 * Retained data on btrfs. A retained volume is a read-only snapshot of the instance's
 * subvolume in `<volume_data_path>/.fred-retained/` (outside the `fred-*` names the live
 * volume listing reads, so no live-lease cleanup can ever reach it), carrying the live
 * volume's owner file. Snapshots are atomic and cheap, and a restore snapshots them again
 * into the destination's volume names, leaving the retained copy untouched until the kit
 * destroys it after the restore committed.
 *
 * Sizes are what each snapshot's qgroup references after a rescan: shared extents count in
 * full, so copies that share data cannot slip past a cap. The volume root's identity is a
 * marker file holding a random id, written once; an unmounted root (or another file
 * system mounted there) does not hold it, so its emptiness is never taken as proof.
 */
const RETAINED_DIR = ".fred-retained";
const ROOT_MARKER = ".fred-volume-root";
const BTRFS_MAGIC = 0x9123683e;
const RETAINED_PREFIX = "fred-retained-";

export class RetainedVolumes {
  readonly #volumes: BtrfsVolumes;
  readonly #storageId: string;
  readonly #rescans = new KeyedMutex();

  constructor(volumes: BtrfsVolumes, storageId: string) {
    this.#volumes = volumes;
    this.#storageId = storageId;
  }

  get #dir(): string {
    return join(this.#volumes.root, RETAINED_DIR);
  }

  #path(name: string): string {
    return join(this.#dir, name);
  }

  static nameOf(leaseUuid: string, service: string, index: number): string {
    return `${RETAINED_PREFIX}${leaseUuid}-${service}-${index}`;
  }

  /** The root's identity, created on first use (startup runs on a verified btrfs root). */
  async identity(create: boolean): Promise<string | undefined> {
    const marker = join(this.#volumes.root, ROOT_MARKER);
    try {
      const fs = await statfs(this.#volumes.root);
      if (fs.type !== BTRFS_MAGIC) return undefined;
      return (await readFile(marker, "utf8")).trim();
    } catch (err) {
      if (!create || (err as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
    }
    const id = `${this.#storageId}/${randomUUID()}`;
    await writeFile(marker, id, { mode: 0o600, flag: "wx" }).catch(() => {});
    return (await readFile(marker, "utf8")).trim();
  }

  async #exists(path: string): Promise<boolean> {
    try {
      return (await stat(path)).isDirectory();
    } catch {
      return false;
    }
  }

  #owned(owner: VolumeOwner | undefined, leaseUuid: string): boolean {
    return owner?.storageId === this.#storageId && owner.leaseUuid === leaseUuid;
  }

  /**
   * Snapshots each instance volume of the lease into the retained namespace, then deletes
   * the live subvolume; measures every retained snapshot. Re-running after a crash at any
   * point finishes the same way (a snapshot is made once; a live volume already copied is
   * only deleted).
   */
  async retain(
    leaseUuid: string,
    instances: readonly InstanceSpec[],
    signal: AbortSignal,
  ): Promise<RetainedSet> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const owner = { storageId: this.#storageId, leaseUuid };
    const kept: { name: string; service: string; index: number }[] = [];
    for (const i of instances) {
      const live = instanceName(leaseUuid, i.service, i.index);
      const name = RetainedVolumes.nameOf(leaseUuid, i.service, i.index);
      const livePath = this.#volumes.pathOf(live);
      const liveThere = await this.#exists(livePath);
      if (liveThere && !this.#owned(await ownerAt(livePath), leaseUuid)) continue; // never ours to keep
      if (!(await this.#exists(this.#path(name)))) {
        if (!liveThere) continue; // nothing of this instance on disk
        await btrfs(["subvolume", "snapshot", "-r", livePath, this.#path(name)], signal);
        retentionCrashPoint("retention.close.after-snapshot");
      }
      if (liveThere) await this.#volumes.destroy(live, owner, signal);
      kept.push({ name, service: i.service, index: i.index });
    }
    if (kept.length === 0) return { volumes: [], fsIdentity: undefined };
    const sizes = await this.#referenced(signal);
    const volumes: RetainedVolume[] = [];
    for (const k of kept) {
      const id = await this.#subvolumeId(this.#path(k.name), signal);
      const bytes = id === undefined ? undefined : sizes.get(id);
      if (bytes === undefined)
        throw new FredError("ERR_BTRFS", `no qgroup figure for retained volume ${k.name}`);
      volumes.push({ ...k, bytes });
    }
    return { volumes, fsIdentity: await this.identity(true) };
  }

  /**
   * Referenced bytes per subvolume id, after a rescan so the figures are current. The file
   * system runs one rescan at a time: ours are serialised, and one already running (another
   * tool's) is waited for before ours starts.
   */
  #referenced(signal: AbortSignal): Promise<Map<number, number>> {
    return this.#rescans.run("rescan", () => this.#rescanAndRead(signal));
  }

  async #rescanAndRead(signal: AbortSignal): Promise<Map<number, number>> {
    const root = this.#volumes.root;
    try {
      await btrfs(["quota", "rescan", "-w", root], signal);
    } catch (err) {
      if (!/in progress/i.test((err as Error).message)) throw err;
      await btrfs(["quota", "rescan", "-W", root], signal);
      await btrfs(["quota", "rescan", "-w", root], signal);
    }
    const text = await btrfs(["qgroup", "show", "--raw", this.#volumes.root], signal);
    const out = new Map<number, number>();
    for (const line of text.split("\n")) {
      const m = /^0\/(\d+)\s+(\d+)\s+/.exec(line.trim());
      if (m) out.set(Number(m[1]), Number(m[2]));
    }
    return out;
  }

  async #subvolumeId(path: string, signal: AbortSignal): Promise<number | undefined> {
    const text = await btrfs(["subvolume", "show", path], signal).catch(() => "");
    const m = /Subvolume ID:\s+(\d+)/.exec(text);
    return m ? Number(m[1]) : undefined;
  }

  /** Deletes retained snapshots whose owner file names this lease and storage id. */
  async destroy(leaseUuid: string, names: readonly string[], signal: AbortSignal): Promise<void> {
    for (const name of names) {
      const path = this.#path(name);
      if (!(await this.#exists(path))) continue;
      if (!this.#owned(await ownerAt(path), leaseUuid)) continue;
      const id = await this.#subvolumeId(path, signal);
      await btrfs(["subvolume", "delete", "--commit-after", path], signal);
      if (id !== undefined)
        await btrfs(["qgroup", "destroy", `0/${id}`, this.#volumes.root], signal).catch(() => {});
    }
  }

  /**
   * Makes the destination's instance volumes writable snapshots of the retained ones,
   * owned by the destination and limited to its new `disk_mb`. A volume already adopted
   * (also one whose owner file still names the source: a crash between snapshot and
   * rewrite) is finished, not made again; one of any other owner is refused.
   */
  async adopt(
    fromLease: string,
    volumes: readonly RetainedVolume[],
    spec: WorkloadSpec,
    signal: AbortSignal,
  ): Promise<void> {
    for (const v of volumes) {
      const instance = spec.instances.find((i) => i.service === v.service && i.index === v.index);
      if (instance === undefined) continue;
      const target = instanceName(spec.leaseUuid, v.service, v.index);
      const targetPath = this.#volumes.pathOf(target);
      if (await this.#exists(targetPath)) {
        const found = await ownerAt(targetPath);
        if (!this.#owned(found, spec.leaseUuid) && !this.#owned(found, fromLease))
          throw new FredError(
            "ERR_VOLUME_FOREIGN",
            `volume ${target} belongs to another lease or deployment`,
          );
      } else {
        await btrfs(["subvolume", "snapshot", this.#path(v.name), targetPath], signal);
        retentionCrashPoint("retention.restore.after-clone");
      }
      // A copy retained under another id map (userns-remap switched since) is moved to the current one.
      const owner: VolumeOwner = { storageId: this.#storageId, leaseUuid: spec.leaseUuid };
      await this.#volumes.settle(targetPath, owner);
      await btrfs(["qgroup", "limit", `${instance.profile.disk_mb}M`, targetPath], signal);
    }
  }

  /** Every retained snapshot this storage id owns, with the root's identity; throws if unreadable. */
  async inventory(): Promise<RetainedInventory> {
    const fsIdentity = await this.identity(false);
    if (fsIdentity === undefined)
      throw new FredError("ERR_VOLUME_FILESYSTEM", "volume root has no identity marker");
    let entries: string[];
    try {
      entries = await readdir(this.#dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      entries = [];
    }
    const names = new Set<string>();
    for (const name of entries) {
      if (!name.startsWith(RETAINED_PREFIX)) continue;
      if ((await ownerAt(this.#path(name)))?.storageId === this.#storageId) names.add(name);
    }
    return { fsIdentity, names };
  }
}
