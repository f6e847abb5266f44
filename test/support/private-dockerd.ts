import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { join } from "node:path";
import { connectDocker } from "../../src/backend/docker/engine.ts";
import { engineAnswers } from "./docker.ts";
import { until } from "./until.ts";

/**
 * A dockerd of a test's own, for the tests that must restart an engine while other files use
 * the shared one on /var/run/docker.sock. Its socket, exec root and pid file live in `RUN_DIR`
 * (fixed: the Docker test lock runs one such file at a time), its data root in a temp dir.
 * It runs with `--iptables=false`: dockerd 20.10 starting with iptables on removes and
 * recreates the DOCKER chains every engine on the host shares, which would wipe the shared
 * engine's published ports under other files. Its default network is a bridge this module
 * makes (`BRIDGE`), never `--bridge=none`: with that, dockerd deletes the host's docker0 on
 * start, the shared engine's default network. Without its own iptables rules its
 * containers' forwarded traffic would meet the FORWARD policy DROP the shared engine sets,
 * so the test's pool is accepted there by two rules this module adds and removes (our nft
 * egress table hooks in before that chain, so what it refuses stays refused). Live-restore
 * is off (the default): a restart stops the containers, as an operator's restart would.
 *
 * One more guard: this dockerd, stopped after a restart, was seen to delete the host's
 * docker0 too (`ip monitor link`: docker0 down and deleted while it shut down), which breaks
 * every later `docker run` on the shared engine's default network. So docker0's addresses
 * are read before the engine starts and the bridge is made again, the same, whenever a stop
 * of this engine took it.
 */

export const RUN_DIR = "/run/fred-egress-engine";
/** Data roots go on disk (images and container layers), not on the /run tmpfs. */
const DATA_PARENT = "/var/tmp";
const DATA_PREFIX = "fred-egress-engine-";
/** The private engine's default bridge; its address is the last /24 of the pool. */
const BRIDGE = "fredegress0";
const bridgeAddress = (pool: string) => `${pool.split(".").slice(0, 2).join(".")}.255.1/24`;

export interface PrivateEngine {
  /** `unix://…` for the backend's `docker_host`. */
  host: string;
  /** The docker CLI's global arguments for this engine. */
  cli: string[];
  /** Stops the engine (SIGTERM, then waits for the process to exit). */
  stop(): Promise<void>;
  /** Starts it again with the same flags; resolves once it answers. */
  start(): Promise<void>;
  /** Stops it if running, removes its firewall rules and every directory of it. */
  remove(): Promise<void>;
}

function run(
  cmd: string,
  args: string[],
  input?: NodeJS.ReadableStream,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
    if (input && child.stdin) input.pipe(child.stdin);
  });
}

/** Exited, whether by a code or a signal (a zombie still answers kill(pid, 0)). */
function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Lazily unmounts every mount point under `dirs`, deepest first. */
async function unmountUnder(dirs: string[]): Promise<void> {
  const points = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((line) => (line.split(" ")[1] ?? "").replace(/\\040/g, " "))
    .filter((point) => dirs.some((dir) => point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const point of points) await run("umount", ["-l", point]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The two FORWARD rules that let the pool's traffic through the shared DROP policy. */
const forwardRules = (pool: string) => [
  ["FORWARD", "-s", pool, "-j", "ACCEPT"],
  ["FORWARD", "-d", pool, "-j", "ACCEPT"],
];

/**
 * What a run that died before its teardown left: its engine (stopped), the directories of it
 * and its FORWARD rules (removed), so this run starts from nothing of it.
 */
async function removeStale(pool: string): Promise<void> {
  const pidFile = join(RUN_DIR, "docker.pid");
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : Number.NaN;
  if (
    Number.isInteger(pid) &&
    pid > 0 &&
    alive(pid) &&
    readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(RUN_DIR)
  ) {
    process.kill(pid, "SIGTERM");
    await until(() => !alive(pid), "a stale private dockerd to stop", 60_000);
  }
  const dataRoots = readdirSync(DATA_PARENT)
    .filter((name) => name.startsWith(DATA_PREFIX))
    .map((name) => join(DATA_PARENT, name));
  await unmountUnder([RUN_DIR, ...dataRoots]);
  for (const dir of [RUN_DIR, ...dataRoots]) rmSync(dir, { recursive: true, force: true });
  for (const rule of forwardRules(pool)) {
    // One copy per dead run at most; bounded so a refusing iptables cannot loop.
    for (let n = 0; n < 10 && (await run("iptables", ["-D", ...rule])).code === 0; n++);
  }
}

/** docker0's IPv4 addresses (CIDR), or undefined when the host has no docker0. */
async function docker0Addresses(): Promise<string[] | undefined> {
  const shown = await run("ip", ["-j", "-4", "addr", "show", "dev", "docker0"]);
  if (shown.code !== 0) return undefined;
  const links = JSON.parse(shown.out || "[]") as { addr_info?: { local: string; prefixlen: number }[] }[];
  return (links[0]?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`);
}

/** Makes docker0 again with `addresses` when it existed before and is gone now. */
async function keepDocker0(addresses: string[] | undefined): Promise<void> {
  if (addresses === undefined || (await docker0Addresses()) !== undefined) return;
  await run("ip", ["link", "add", "docker0", "type", "bridge"]);
  for (const address of addresses) await run("ip", ["addr", "add", address, "dev", "docker0"]);
  await run("ip", ["link", "set", "docker0", "up"]);
}

/** Starts a private engine on `pool` (a /16 no other engine hands out). */
export async function startPrivateEngine(pool: string): Promise<PrivateEngine> {
  await removeStale(pool);
  const docker0 = await docker0Addresses();
  await run("ip", ["link", "delete", BRIDGE]);
  mkdirSync(RUN_DIR, { recursive: true });
  const dataRoot = mkdtempSync(join(DATA_PARENT, DATA_PREFIX));
  const socket = join(RUN_DIR, "docker.sock");
  const host = `unix://${socket}`;
  const args = [
    "-H",
    host,
    "--data-root",
    dataRoot,
    "--exec-root",
    join(RUN_DIR, "exec"),
    "--pidfile",
    join(RUN_DIR, "docker.pid"),
    `--bridge=${BRIDGE}`,
    "--iptables=false",
    "--default-address-pool",
    `base=${pool},size=24`,
  ];
  let child: ChildProcess | undefined;
  const docker = connectDocker(host);
  const engine: PrivateEngine = {
    host,
    cli: ["-H", host],
    async start() {
      const log = openSync(join(dataRoot, "dockerd.log"), "a");
      child = spawn("dockerd", args, { stdio: ["ignore", log, log] });
      closeSync(log);
      await until(() => engineAnswers(docker), "the private dockerd to answer", 60_000);
    },
    async stop() {
      const running = child;
      if (running?.pid === undefined || exited(running)) return;
      running.kill("SIGTERM");
      await until(() => exited(running), "the private dockerd to stop", 60_000);
      await keepDocker0(docker0);
    },
    async remove() {
      await engine.stop();
      for (const rule of forwardRules(pool)) await run("iptables", ["-D", ...rule]);
      await run("ip", ["link", "delete", BRIDGE]);
      // Network namespaces and any mount dockerd left are unmounted first: rm must not
      // descend into (or fail on) a mount.
      await unmountUnder([RUN_DIR, dataRoot]);
      rmSync(RUN_DIR, { recursive: true, force: true });
      rmSync(dataRoot, { recursive: true, force: true });
    },
  };
  try {
    for (const args of [
      ["link", "add", BRIDGE, "type", "bridge"],
      ["addr", "add", bridgeAddress(pool), "dev", BRIDGE],
      ["link", "set", BRIDGE, "up"],
    ]) {
      const made = await run("ip", args);
      if (made.code !== 0) throw new Error(`ip ${args.join(" ")}: ${made.out}`);
    }
    for (const rule of forwardRules(pool)) {
      const added = await run("iptables", ["-I", ...rule]);
      if (added.code !== 0) throw new Error(`iptables -I ${rule.join(" ")}: ${added.out}`);
    }
    await engine.start();
  } catch (err) {
    await engine.remove();
    throw err;
  }
  return engine;
}

/**
 * Copies `tag` from the shared engine into `engine` (`docker save | docker load`): the same
 * image, byte for byte, that the shared engine's suites run.
 */
export async function copyImage(engine: PrivateEngine, tag: string): Promise<void> {
  const save = spawn("docker", ["save", tag], { stdio: ["ignore", "pipe", "inherit"] });
  const loaded = await run("docker", [...engine.cli, "load"], save.stdout);
  if (loaded.code !== 0) throw new Error(`docker load ${tag} into the private engine: ${loaded.out}`);
}
