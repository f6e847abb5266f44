export { armDockerCrashPoints, DOCKER_CRASH_POINTS, type DockerCrashPoint } from "./crash-points.ts";
export { restartWorkload } from "./restart.ts";
export { updateWorkload } from "./update.ts";
export type { MaintenanceDeps, OwnedContainer } from "./workload.ts";
