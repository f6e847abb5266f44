import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type Docker from "dockerode";
import { connectDocker } from "../../src/backend/docker/engine.ts";
import { type IdShift, idShiftOf } from "../../src/backend/docker/userns.ts";
import {
  BTRFS_ROOT,
  type DockerNeeds,
  type DockerState,
  dockerVerdict,
  engineRemaps,
  imageTag,
  probeHost,
  REQUIRE_DOCKER,
  TEST_DOCKER_HOST,
  type TestImage,
} from "./docker-env.ts";
import { until } from "./until.ts";

export {
  BTRFS_ROOT,
  type DockerNeeds,
  REQUIRE_DOCKER,
  TEST_DOCKER_HOST,
  type TestImage,
} from "./docker-env.ts";

/**
 * The Docker engine fixture every suite that needs an engine shares (the Docker backend's,
 * providerd's e2e, `fred up`, the release image): whether an engine answers and whether it
 * must (REQUIRE_DOCKER=1 in CI turns a skip into a failure), the lock that runs those files
 * one at a time, the test btrfs mount and fresh directories on it, the docker CLI, and an
 * engine restart for the fault tests. Each suite declares what it needs (`dockerSkip({
 * btrfs, images })`); the decisions themselves are in docker-env.ts. The fred-test/* images
 * are built once per machine by test/backend/docker/images/build.sh, which `npm test` runs
 * as root when one is missing (test/support/docker-prepare.sh, also run by
 * .ci/docker-setup.sh). Imported directly, not through index.ts, so suites without Docker
 * never load dockerode.
 */

export async function engineAnswers(docker: Docker = connectDocker(TEST_DOCKER_HOST)): Promise<boolean> {
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("ping timeout")), 3000).unref()),
    ]);
    return true;
  } catch {
    return false;
  }
}

/**
 * `skip` option for a describe that needs the engine and what `needs` names: false when all
 * of it is there, else the reason and how to enable the suite. With REQUIRE_DOCKER=1 (CI)
 * a missing piece throws, so the run fails instead of skipping. An engine that does not
 * answer may only be restarting under another file's fault test (which holds the engine
 * lock while it does), so the verdict is taken again once this file holds the lock: a file
 * that starts beside the fault test waits for it instead of failing. The images are asked
 * for under the lock too, for the same reason.
 */
export async function dockerSkip(needs: Omit<DockerNeeds, "engine"> = {}): Promise<false | string> {
  const wanted: DockerNeeds = { ...needs, engine: true };
  if (!REQUIRE_DOCKER) {
    // Skip without waiting for the lock when the engine, the mount or root is known missing.
    const early = dockerVerdict(
      { engine: await engineAnswers(), ...probeHost(), missingImages: [] },
      wanted,
      false,
    );
    if ("skip" in early) return early.skip;
  }
  await holdEngineLock();
  const docker = connectDocker(TEST_DOCKER_HOST);
  const engine = await engineAnswers(docker);
  const state: DockerState = {
    engine,
    ...probeHost(),
    missingImages: engine ? await missingImages(docker, needs.images ?? []) : [],
    userns: engine && (await engineRemaps()),
  };
  return verdictToSkip(dockerVerdict(state, wanted, REQUIRE_DOCKER));
}

/** The test engine's container-id → host-id shift (the identity on a plain engine). */
export async function engineIdShift(docker: Docker = connectDocker(TEST_DOCKER_HOST)): Promise<IdShift> {
  return idShiftOf(await docker.info());
}

async function missingImages(docker: Docker, images: readonly TestImage[]): Promise<TestImage[]> {
  const found = await Promise.all(
    images.map((i) =>
      docker
        .getImage(imageTag(i))
        .inspect()
        .then(
          () => true,
          () => false,
        ),
    ),
  );
  return images.filter((_, n) => !found[n]);
}

function verdictToSkip(verdict: ReturnType<typeof dockerVerdict>): false | string {
  if ("fail" in verdict) throw new Error(verdict.fail);
  return "skip" in verdict ? verdict.skip : false;
}

/**
 * One lock per engine: runs against a second engine (DOCKER_HOST) never wait for, or
 * restart under, the files using the default one.
 */
const LOCK_DIR =
  TEST_DOCKER_HOST === "unix:///var/run/docker.sock"
    ? "/tmp/fred-docker-tests.lock"
    : `/tmp/fred-docker-tests-${TEST_DOCKER_HOST.slice("unix://".length).replace(/[^A-Za-z0-9]+/g, "-")}.lock`;

/**
 * Serialises the Docker test files (the runner executes files in parallel processes):
 * the fault tests restart the engine, which must not hit another file's containers.
 * A lock directory holds the owner's pid; a lock whose owner is gone is taken over.
 * Released when this process exits.
 */
export async function holdEngineLock(timeoutMs = 600_000): Promise<void> {
  await until(tryTakeEngineLock, `the Docker test lock ${LOCK_DIR}`, { timeoutMs, intervalMs: 100 });
}

/**
 * Gives the lock back before this process exits, for a file whose last part needs no engine
 * (waiting Docker files start sooner). Only a lock this process holds is removed.
 */
export function releaseEngineLock(): void {
  try {
    if (Number(readFileSync(`${LOCK_DIR}/pid`, "utf8")) === process.pid)
      rmSync(LOCK_DIR, { recursive: true, force: true });
  } catch {
    // no lock, or not ours any more
  }
}

function tryTakeEngineLock(): boolean {
  try {
    mkdirSync(LOCK_DIR);
    writeFileSync(`${LOCK_DIR}/pid`, String(process.pid));
    process.once("exit", releaseEngineLock);
    return true;
  } catch {
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(`${LOCK_DIR}/pid`, "utf8"));
    } catch {
      // pid not written yet: the owner is between mkdir and write
    }
    if (Number.isInteger(owner) && !alive(owner)) rmSync(LOCK_DIR, { recursive: true, force: true });
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `skip` option for a describe that needs only the test btrfs mount (and root), not the
 * engine; with REQUIRE_DOCKER=1 a missing piece throws, as in `dockerSkip`.
 */
export function btrfsSkip(): false | string {
  const state: DockerState = { engine: false, ...probeHost(), missingImages: [] };
  return verdictToSkip(dockerVerdict(state, { engine: false, btrfs: true }, REQUIRE_DOCKER));
}

/** A fresh directory under the test btrfs mount; the returned function removes it. */
export function scratchVolumeRoot(tag: string): { path: string; remove: () => void } {
  const path = join(BTRFS_ROOT, `t-${tag}-${randomUUID().slice(0, 8)}`);
  mkdirSync(path, { recursive: true });
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** `docker <args>` → exit code and combined output (never throws). */
export function dockerCli(args: string[], timeoutMs = 30_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile("docker", args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === "number"
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

/** The socket a dockerd command line listens on (`-H`/`--host`, else the default one). */
export function dockerdHost(argv: readonly string[]): string {
  for (const [i, arg] of argv.entries()) {
    if (arg === "-H" || arg === "--host") return argv[i + 1] ?? "";
    const m = /^(?:-H=?|--host=)(.+)$/.exec(arg);
    if (m) return m[1] as string;
  }
  return "unix:///var/run/docker.sock";
}

/** Runs `sh -c script` inside a container. */
export function execIn(container: string, script: string): Promise<{ code: number; out: string }> {
  return dockerCli(["exec", container, "sh", "-c", script]);
}

/**
 * Restarts the Docker engine the way an operator's restart would: SIGTERM to dockerd
 * (our containers have no restart policy, so they stop with it), then the same command
 * line again, detached, logging to /var/log/fred-dockerd.log. Resolves once it answers.
 */
/**
 * Stops dockerd (SIGTERM), runs `whileDown`, and starts it again with the same arguments.
 * The dockerd is the one listening on the test engine's socket: a machine may run a second
 * engine (another socket), which is never touched.
 */
export async function restartDockerd(whileDown: () => Promise<void> = async () => {}): Promise<void> {
  const pidText = await new Promise<string>((resolve) =>
    execFile("pidof", ["dockerd"], (_err, stdout) => resolve(String(stdout).trim())),
  );
  const argvOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  const pid = pidText
    .split(/\s+/)
    .map(Number)
    .find((p) => Number.isInteger(p) && p > 0 && dockerdHost(argvOf(p)) === TEST_DOCKER_HOST);
  if (pid === undefined) throw new Error(`no local dockerd listens on ${TEST_DOCKER_HOST}`);
  const argv = argvOf(pid);
  process.kill(pid, "SIGTERM");
  await until(() => !alive(pid), "dockerd to stop", 90_000);
  try {
    await whileDown();
  } finally {
    const log = openSync("/var/log/fred-dockerd.log", "a");
    const child = spawn(argv[0] as string, argv.slice(1), { detached: true, stdio: ["ignore", log, log] });
    child.unref();
    closeSync(log);
  }
  await until(() => engineAnswers(), "dockerd to answer again", 90_000);
}
