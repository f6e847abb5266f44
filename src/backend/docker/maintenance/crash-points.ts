import { armCrashPoints, crashPoint } from "../../../failpoints.ts";

/**
 * The Docker backend's crash points (the mechanism: src/failpoints.ts), one at each step
 * of a restart and an update where a `kill -9` leaves a distinct state on the engine. The
 * kit has journaled the command before it calls the substrate, so `*.begin` is "after the
 * command is journaled"; `*.after-start` is the last line before the substrate returns,
 * so the kit has not recorded the completion (nor queued its callback) yet.
 */
export const DOCKER_CRASH_POINTS = [
  /** Restart: called, nothing touched yet. */
  "docker.restart.begin",
  /** Restart: the old containers are stopped (set aside), the new ones created, not started. */
  "docker.restart.after-stop",
  /** Restart: the recreated containers run and passed verification. */
  "docker.restart.after-start",
  /** Update: called, nothing touched yet. */
  "docker.update.begin",
  /** Update: the next release's containers exist and the current release's are stopped. */
  "docker.update.after-stop",
  /** Update: the next release runs and passed verification; the previous one is not removed. */
  "docker.update.after-start",
  /** Update: the next release failed and its containers are gone; the previous one is not restarted. */
  "docker.update.in-rollback",
] as const;
export type DockerCrashPoint = (typeof DOCKER_CRASH_POINTS)[number];

/** Arms `FRED_FAILPOINTS` for a Docker backend process; an unknown name is an error. */
export function armDockerCrashPoints(spec: string | undefined): DockerCrashPoint[] {
  return armCrashPoints(spec, DOCKER_CRASH_POINTS);
}

export function dockerCrashPoint(name: DockerCrashPoint): void {
  crashPoint(name);
}
