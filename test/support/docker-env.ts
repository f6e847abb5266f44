import { spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync, statfsSync } from "node:fs";
import { request } from "node:http";
import { delimiter, join } from "node:path";

/**
 * What the Docker suites need from the machine, and the decisions taken on it: whether a
 * suite runs, skips (with the reason and how to enable it) or fails (REQUIRE_DOCKER=1), and
 * whether `npm test` prepares the missing pieces itself first. The decisions are pure
 * functions of a probed `DockerState`, so they are table-tested without touching the
 * machine. No dockerode here: scripts/run-tests.mjs loads this file before every run that
 * includes a Docker suite, and the engine answers plain HTTP on its socket.
 */

/** The btrfs mount (quotas enabled) the suites put volumes on; FRED_TEST_BTRFS moves it. */
export const BTRFS_ROOT = process.env.FRED_TEST_BTRFS ?? "/var/lib/fred-test-btrfs";
/** CI sets REQUIRE_DOCKER=1: a missing piece is then a failure, never a skip. */
export const REQUIRE_DOCKER = process.env.REQUIRE_DOCKER === "1";
/**
 * CI also sets REQUIRE_USERNS=1: its engine runs with userns-remap, and a suite that needs
 * remapping fails instead of skipping on an engine without it.
 */
export const REQUIRE_USERNS = process.env.REQUIRE_USERNS === "1";
/**
 * The engine the suites use: DOCKER_HOST when it names a unix socket (a second engine, such
 * as one started with userns-remap beside the plain one), else the default socket.
 */
export const TEST_DOCKER_HOST = testDockerHost(process.env.DOCKER_HOST);
export const DOCKER_SOCKET = TEST_DOCKER_HOST.slice("unix://".length);

export function testDockerHost(env: string | undefined): string {
  return env?.startsWith("unix:///") ? env : "unix:///var/run/docker.sock";
}

/** The images test/backend/docker/images/build.sh makes (a test checks the two agree). */
export const TEST_IMAGES = [
  "httpd",
  "crashloop",
  "unhealthy",
  "volume",
  "seeded",
  "owned",
  "owned-split",
  "owned-user",
] as const;
export type TestImage = (typeof TEST_IMAGES)[number];
export const imageTag = (image: TestImage): string => `fred-test/${image}:1`;

/**
 * What one suite declares it needs. `engine` unless false. `btrfs`: volumes on the shared
 * mount at BTRFS_ROOT, and root, since subvolumes and qgroup limits are root's. `ownBtrfs`:
 * the suite's command mounts its own loopback btrfs (`fred up --docker`), which takes root
 * and btrfs-progs. `privateEngine`: the suite starts a dockerd of its own (to restart it
 * without touching the shared engine), which takes root and the dockerd binary. `images`:
 * the fred-test/* images it runs. `userns`: an engine started with userns-remap.
 */
export interface DockerNeeds {
  engine?: boolean;
  btrfs?: boolean;
  ownBtrfs?: boolean;
  privateEngine?: boolean;
  images?: readonly TestImage[];
  userns?: boolean;
}

/**
 * The machine as probed. `missingImages` and `userns` (the engine remaps user namespaces)
 * are only meaningful when the engine answers.
 */
export interface DockerState {
  engine: boolean;
  btrfs: boolean;
  root: boolean;
  btrfsTools: boolean;
  dockerd: boolean;
  missingImages: readonly TestImage[];
  userns?: boolean;
}

export const USERNS_HINT =
  "start dockerd with --userns-remap=default (as .ci/docker-setup.sh does) and point DOCKER_HOST at it, or set REQUIRE_USERNS=1 to fail instead";

export const ENABLE_HINT = "run sudo bash .ci/docker-setup.sh or set REQUIRE_DOCKER=1 to fail instead";
export const ROOT_HINT = "run npm test as root or set REQUIRE_DOCKER=1 to fail instead";
export const NOT_ROOT = "not root (btrfs volumes and their quotas need it)";
export const NO_DOCKERD = "no dockerd binary (the suite starts a private engine of its own)";

export type Verdict = { run: true } | { skip: string } | { fail: string };

/** What is missing for `needs`, one phrase per piece (empty when the suite can run). */
export function missingFor(state: DockerState, needs: DockerNeeds, btrfsRoot = BTRFS_ROOT): string[] {
  const missing: string[] = [];
  if ((needs.engine ?? true) && !state.engine) missing.push(`no Docker engine answers on ${DOCKER_SOCKET}`);
  if (needs.btrfs && !state.btrfs) missing.push(`${btrfsRoot} is not a btrfs mount`);
  if ((needs.btrfs || needs.ownBtrfs || needs.privateEngine) && !state.root) missing.push(NOT_ROOT);
  if (needs.ownBtrfs && !state.btrfsTools) missing.push("no btrfs-progs (mkfs.btrfs, btrfs)");
  if (needs.privateEngine && !state.dockerd) missing.push(NO_DOCKERD);
  // Without an engine the images cannot be asked for; the engine phrase already says why.
  const images = (needs.images ?? []).filter((i) => state.missingImages.includes(i));
  if (state.engine && images.length > 0)
    missing.push(`test images missing: ${images.map(imageTag).join(" ")}`);
  return missing;
}

/**
 * The per-suite decision: run, skip at describe level, or fail when REQUIRE_DOCKER=1. An
 * engine without userns-remap, for a suite that needs it, fails only with REQUIRE_USERNS=1:
 * a developer's plain engine runs every other suite.
 */
export function dockerVerdict(
  state: DockerState,
  needs: DockerNeeds,
  required: boolean,
  btrfsRoot = BTRFS_ROOT,
  usernsRequired = REQUIRE_USERNS,
): Verdict {
  const missing = missingFor(state, needs, btrfsRoot);
  if (missing.length > 0) {
    if (required) return { fail: `REQUIRE_DOCKER=1 but ${missing.join("; ")}` };
    return { skip: `${missing.join("; ")}; ${missing.includes(NOT_ROOT) ? ROOT_HINT : ENABLE_HINT}` };
  }
  if (needs.userns && !state.userns) {
    const what = `the engine on ${DOCKER_SOCKET} does not remap user namespaces`;
    if (usernsRequired) return { fail: `REQUIRE_USERNS=1 but ${what}` };
    return { skip: `${what}; ${USERNS_HINT}` };
  }
  return { run: true };
}

export type Plan = { action: "ready" } | { action: "prepare" } | { action: "report"; line: string };

/** Everything any Docker suite may need: the runner prepares or reports against this. */
const EVERYTHING: DockerNeeds = { engine: true, btrfs: true, ownBtrfs: true, images: TEST_IMAGES };

/**
 * The runner's decision before a run that includes Docker suites. It prepares the shared
 * btrfs mount and the images (test/support/docker-prepare.sh) when one is missing and it
 * runs as root with `missingTools` empty; installing packages and starting an engine are
 * left to .ci/docker-setup.sh. Otherwise one line says what is missing, why npm test left it
 * so and how to get it; the suites that need it skip on their own (fail with REQUIRE_DOCKER=1).
 */
export function preparePlan(
  state: DockerState,
  missingTools: readonly string[],
  required: boolean,
  btrfsRoot = BTRFS_ROOT,
): Plan {
  const missing = missingFor(state, EVERYTHING, btrfsRoot);
  if (missing.length === 0) return { action: "ready" };
  if (preparable(state) && state.root && missingTools.length === 0) return { action: "prepare" };
  // Not root is a missing piece of its own; a missing tool is why root did not prepare.
  const why =
    preparable(state) && state.root
      ? ` (npm test cannot prepare them without ${missingTools.join(", ")})`
      : "";
  return { action: "report", line: reportLine(missing, why, required) };
}

/** Something docker-prepare.sh makes is missing: the btrfs mount, or images on an engine. */
function preparable(state: DockerState): boolean {
  return !state.btrfs || (state.engine && state.missingImages.length > 0);
}

/** The one line the runner prints: what is missing, why it stays so, how to get it. */
function reportLine(missing: string[], why: string, required: boolean): string {
  const what = `${missing.join("; ")}${why}`;
  if (required) return `REQUIRE_DOCKER=1: the Docker suites will fail: ${what}`;
  const hint = missing.includes(NOT_ROOT) ? ROOT_HINT : ENABLE_HINT;
  return `Docker suites skipped where they need it: ${what}; ${hint}`;
}

/** Whether `path` is on a btrfs file system. */
export function isBtrfs(path: string): boolean {
  try {
    return statfsSync(path).type === 0x9123683e;
  } catch {
    return false;
  }
}

/** GET `path` from the engine's API socket → HTTP status, or 0 when nothing answers. */
function engineGet(path: string, timeoutMs = 3000): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ socketPath: DOCKER_SOCKET, path, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(0));
    req.end();
  });
}

/** Whether the engine's `/info` lists the `name=userns` security option (false when it does not answer). */
export function engineRemaps(timeoutMs = 3000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: DOCKER_SOCKET, path: "/info", timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => {
        try {
          const options = (JSON.parse(body) as { SecurityOptions?: unknown }).SecurityOptions;
          resolve(
            Array.isArray(options) && options.some((o) => String(o).split(",").includes("name=userns")),
          );
        } catch {
          resolve(false);
        }
      });
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}

/** The state as this process sees it, without dockerode. */
export async function probeDockerState(images: readonly TestImage[] = TEST_IMAGES): Promise<DockerState> {
  const engine = (await engineGet("/_ping")) === 200;
  const found = engine
    ? await Promise.all(images.map(async (i) => (await engineGet(`/images/${imageTag(i)}/json`)) === 200))
    : images.map(() => false);
  return { engine, ...probeHost(), missingImages: images.filter((_, n) => !found[n]) };
}

/** The parts of the state that need no engine. */
export function probeHost(): Pick<DockerState, "btrfs" | "root" | "btrfsTools" | "dockerd"> {
  return {
    btrfs: isBtrfs(BTRFS_ROOT),
    root: process.getuid?.() === 0,
    btrfsTools: onPath("mkfs.btrfs") && onPath("btrfs"),
    dockerd: onPath("dockerd"),
  };
}

/** On PATH, or in the sbin folders a user's PATH often lacks (where mkfs.btrfs lives). */
function onPath(tool: string): boolean {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/sbin"];
  return dirs.some((dir) => executable(join(dir, tool)));
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The tools docker-prepare.sh and images/build.sh run that this machine lacks. */
export function missingPrepareTools(): string[] {
  const tools = ["mountpoint", "mkfs.btrfs", "btrfs", "docker", "tar", "sha256sum"].filter((t) => !onPath(t));
  const busybox = process.env.BUSYBOX ?? "/bin/busybox";
  return executable(busybox) ? tools : [...tools, `${busybox} (busybox-static)`];
}

/**
 * Called by scripts/run-tests.mjs before a run that includes Docker suites: prepares what
 * is missing when it can, and returns the one line to print when something stays missing
 * (null when everything is there).
 */
export async function prepareDockerTests(): Promise<string | null> {
  const plan = preparePlan(await probeDockerState(), missingPrepareTools(), REQUIRE_DOCKER);
  if (plan.action !== "prepare") return plan.action === "report" ? plan.line : null;
  const script = join(import.meta.dirname, "docker-prepare.sh");
  console.error(`== preparing the Docker suites: bash ${script}`);
  const done = spawnSync("bash", [script], { stdio: ["ignore", "inherit", "inherit"] });
  const after = await probeDockerState();
  const missing = missingFor(after, EVERYTHING);
  if (missing.length === 0) return null;
  const why = preparable(after) ? ` (docker-prepare.sh exited ${done.status ?? done.signal})` : "";
  return reportLine(missing, why, REQUIRE_DOCKER);
}

/** The image tags build.sh makes, read from its `build … fred-test/<name>:1` lines. */
export function builtImageTags(buildScript: string): string[] {
  return [...readFileSync(buildScript, "utf8").matchAll(/^build (?:--rootfs \S+ )?(fred-test\/\S+)/gm)].map(
    (m) => m[1] as string,
  );
}
