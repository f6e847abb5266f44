import { type SubstrateError, substrateOutcomeOf, type WorkloadSpec } from "../../kit/index.ts";
import { definite } from "../engine.ts";
import { dockerCrashPoint } from "./crash-points.ts";
import { isInstance, type MaintenanceDeps, removeEach, stopEach } from "./workload.ts";

/**
 * Restart: the lease's containers are stopped (within their stop grace), removed and
 * created again from the same spec, then started and verified exactly as a provision is.
 * Volumes are bind mounts of the instance's subvolume, so the tenant's data is where it
 * was. A re-call after a crash simply runs the steps again from whatever exists: each one
 * is idempotent, and the spec is the same, so it ends with the release running.
 */
export async function restartWorkload(
  deps: MaintenanceDeps,
  spec: WorkloadSpec,
  signal: AbortSignal,
): Promise<void> {
  dockerCrashPoint("docker.restart.begin");
  // An image gone from the host would fail the create after the old containers are gone.
  try {
    await deps.ensureImages(spec, signal);
  } catch (err) {
    throw asRestartFailure(err);
  }
  // Leftover seed helpers go too: nothing of the previous containers may survive.
  const before = await deps.owned(spec.leaseUuid, signal);
  await stopEach(deps, before.filter(isInstance), signal);
  dockerCrashPoint("docker.restart.after-stop");
  await removeEach(deps, before, signal);
  try {
    await deps.create(spec, signal);
    await deps.start(spec, signal, { startStopped: false });
  } catch (err) {
    throw asRestartFailure(err);
  }
  deps.log.info({ lease_uuid: spec.leaseUuid, release: spec.release }, "lease restarted");
  dockerCrashPoint("docker.restart.after-start");
}

/** A definite failure keeps its tenant-safe message under the reason `RestartFailed`. */
function asRestartFailure(err: unknown): unknown {
  if (substrateOutcomeOf(err) !== "definite") return err;
  const cause = err as SubstrateError;
  return definite("RestartFailed", cause.tenantMessage, "restart", cause);
}
