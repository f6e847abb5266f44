import { spawn } from "node:child_process";
import { BtrfsVolumes } from "../../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../../src/backend/docker/engine.ts";
import type { WorkloadSpec } from "../../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../../src/core/clock.ts";
import { createLogger } from "../../../../src/log.ts";
import { dockerCli, engineIdShift } from "../../../support/docker.ts";
import { substrateConfig } from "../substrate-helper.ts";

/**
 * Shared by the maintenance tests on the substrate: one substrate per storage id and
 * volume root, what the engine holds for a lease (name, release, state per container),
 * and a child process that runs one restart or update with a crash point armed, so the
 * test can look at what a `kill -9` at that step leaves and call again.
 */

/** Startup verification: a next release that exits at once is seen exited well within it. */
export const VERIFY = "1500ms";

/** An idle workload with a durable /data; it ignores SIGTERM, so its stop grace is kept short. */
export const VOLUME_APP = { image: "fred-test/volume:1", stop_grace_period: "1s" };

/** The "bad image" of a next release: a local image whose command exits non-zero. */
export const EXITS = { command: ["/bin/sh", "-c", "echo giving up; exit 3"] };

export async function maintenanceSubstrate(storageId: string, volumeRoot: string): Promise<DockerSubstrate> {
  const config = substrateConfig(volumeRoot, { startup_verify_duration: VERIFY });
  const ids = await engineIdShift();
  return new DockerSubstrate({
    config,
    storageId,
    docker: connectDocker(config.dockerHost),
    clock: systemClock,
    log: createLogger("test-docker-maintenance", process.env.TEST_LOG_LEVEL ?? "silent"),
    volumes: new BtrfsVolumes(config.volumeDataPath, storageId, ids),
    ids,
  });
}

/**
 * The system clock's timers are unref'd (a daemon's servers keep it alive); a substrate
 * used bare, waiting out startup verification, needs something that holds the event loop.
 * Returns the release.
 */
export function holdEventLoop(): () => void {
  const timer = setInterval(() => {}, 60_000);
  return () => clearInterval(timer);
}

export interface Held {
  name: string;
  release: string;
  state: string;
  id: string;
}

/** Every container labelled with the lease (ours or not), sorted by name. */
export async function held(lease: string): Promise<Held[]> {
  const ps = await dockerCli([
    "ps",
    "-a",
    "--no-trunc",
    "--filter",
    `label=fred.lease_uuid=${lease}`,
    "--format",
    '{{.Names}}\t{{.Label "fred.release"}}\t{{.State}}\t{{.ID}}',
  ]);
  if (ps.code !== 0) throw new Error(ps.out);
  return ps.out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [name = "", release = "", state = "", id = ""] = line.split("\t");
      return { name, release, state, id };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

export type CrashCall =
  | { op: "restart"; spec: WorkloadSpec }
  | { op: "update"; current: WorkloadSpec; next: WorkloadSpec };

/**
 * Runs the call in a child process with `FRED_FAILPOINTS=<point>` and resolves with how it
 * ended: "killed" when the crash point fired, else its exit code (0: the call returned, 2:
 * it threw).
 */
export function runUntilCrash(
  storageId: string,
  volumeRoot: string,
  point: string,
  call: CrashCall,
): Promise<{ end: "killed" | number; out: string }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL("./crash-child.ts", import.meta.url).pathname],
    {
      env: { ...process.env, FRED_FAILPOINTS: point },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    out += d;
  });
  child.stdin.end(JSON.stringify({ storageId, volumeRoot, call }));
  return new Promise((resolve) =>
    child.on("exit", (code, signal) => resolve({ end: signal === "SIGKILL" ? "killed" : (code ?? 1), out })),
  );
}
