import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { FredError } from "../../core/errors.ts";

/**
 * Durable tenant volumes for `fred up --docker`: a 2 GiB sparse file under the home folder
 * formatted as btrfs with quotas and loop-mounted, which is what the Docker backend needs
 * to enforce each volume's size. Root on Linux only (mount and quota calls); idempotent,
 * so a second start finds it mounted or mounts the existing file again.
 */
const SIZE = "2G";

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === "ENOENT")
      throw new FredError(
        "ERR_USAGE",
        `fred up --docker needs ${cmd} (apt-get install btrfs-progs util-linux)`,
      );
    throw new FredError("ERR_USAGE", `${cmd} ${args.join(" ")} failed: ${(e.stderr ?? "").trim()}`);
  }
}

export function canPrepareBtrfs(): boolean {
  return process.platform === "linux" && process.getuid?.() === 0;
}

function isMountPoint(dir: string): boolean {
  try {
    execFileSync("mountpoint", ["-q", dir], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Returns the mounted volume folder inside `<dir>`, creating and mounting it when needed. */
export function prepareLoopbackBtrfs(dir: string): string {
  const image = join(dir, "volumes.img");
  const mount = join(dir, "volumes");
  mkdirSync(mount, { recursive: true, mode: 0o700 });
  if (!isMountPoint(mount)) {
    if (!existsSync(image)) {
      run("truncate", ["-s", SIZE, image]);
      run("mkfs.btrfs", ["-q", image]);
    }
    run("mount", ["-o", "loop", image, mount]);
  }
  run("btrfs", ["quota", "enable", mount]);
  const data = join(mount, "data");
  mkdirSync(data, { recursive: true, mode: 0o700 });
  return data;
}

/** Unmounts the loopback file system (for `--reset`); absent or unmounted is fine. */
export function releaseLoopbackBtrfs(dir: string): void {
  const mount = join(dir, "volumes");
  if (existsSync(mount) && isMountPoint(mount)) run("umount", [mount]);
}
