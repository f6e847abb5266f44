import { readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";
import pkg from "../package.json" with { type: "json" };

/**
 * What `--version`, `/health` and `/v1/provider` report: the package version, and the
 * git commit. From a checkout the commit is read at runtime from the `.git` beside the
 * package (a worktree's `.git` file and packed refs included); an installed package has
 * none, and reports the commit its bundle was built from (stamped by
 * scripts/build-package.mjs), or none.
 */
export interface FredVersion {
  version: string;
  commit: string | undefined;
}

const PACKAGE_ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * esbuild's `define` replaces this name with the commit's string literal in the packaged
 * bundle; anywhere else it is never declared, which `typeof` tolerates.
 */
declare const __FRED_BUILD_COMMIT__: string | undefined;

function buildCommit(): string | undefined {
  return typeof __FRED_BUILD_COMMIT__ === "string" && isSha(__FRED_BUILD_COMMIT__)
    ? __FRED_BUILD_COMMIT__
    : undefined;
}

let cached: FredVersion | undefined;

export function fredVersion(): FredVersion {
  cached ??= { version: pkg.version, commit: gitCommit(PACKAGE_ROOT) ?? buildCommit() };
  return cached;
}

/** "0.1.0 (commit 1a2b3c4d5e6f)" or "0.1.0". */
export function versionText(v: FredVersion = fredVersion()): string {
  return v.commit === undefined ? v.version : `${v.version} (commit ${v.commit.slice(0, 12)})`;
}

export function gitCommit(root: string): string | undefined {
  try {
    const gitDir = resolveGitDir(join(root, ".git"));
    if (gitDir === undefined) return undefined;
    const head = readFileSync(join(gitDir, "HEAD"), "utf8").trim();
    const ref = /^ref: (.+)$/.exec(head)?.[1];
    if (ref === undefined) return isSha(head) ? head : undefined;
    const common = commonDir(gitDir);
    for (const dir of [gitDir, common]) {
      const loose = readIfExists(join(dir, ref))?.trim();
      if (loose !== undefined && isSha(loose)) return loose;
    }
    const packed = readIfExists(join(common, "packed-refs")) ?? "";
    for (const line of packed.split("\n")) {
      const [sha, name] = line.split(" ");
      if (name === ref && sha !== undefined && isSha(sha)) return sha;
    }
    return undefined;
  } catch {
    // A damaged or unreadable checkout never stops a command: the version has no commit.
    return undefined;
  }
}

/** `.git` is a directory, or (worktrees, submodules) a file naming one. */
function resolveGitDir(dotGit: string): string | undefined {
  const st = statSync(dotGit, { throwIfNoEntry: false });
  if (st === undefined) return undefined;
  if (st.isDirectory()) return dotGit;
  const target = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, "utf8"))?.[1]?.trim();
  if (target === undefined) return undefined;
  return isAbsolute(target) ? target : join(dirname(dotGit), target);
}

function commonDir(gitDir: string): string {
  const rel = readIfExists(join(gitDir, "commondir"))?.trim();
  if (rel === undefined || rel === "") return gitDir;
  return isAbsolute(rel) ? rel : join(gitDir, rel);
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function isSha(s: string): boolean {
  return /^[0-9a-f]{40}$|^[0-9a-f]{64}$/.test(s);
}
