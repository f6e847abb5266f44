import { type SubstrateError, substrateOutcomeOf, type WorkloadSpec } from "../../kit/index.ts";
import { definite } from "../engine.ts";
import { dockerCrashPoint } from "./crash-points.ts";
import { isInstance, type MaintenanceDeps, nameFor, removeEach, rename, stopEach } from "./workload.ts";

/**
 * Restart: the lease's containers are stopped (within their stop grace), removed and
 * created again from the same spec, then started and verified exactly as a provision is.
 * Volumes are bind mounts of the instance's subvolume, so the tenant's data is where it
 * was. To keep the restart close to a bare `docker restart`, the old containers step aside
 * (renamed) so the new ones are created while the old ones stop, and the old ones are
 * removed while the new ones start; the new ones start only once the old ones stopped.
 * A re-call after a crash first removes what an interrupted restart set aside, then runs
 * the steps again: the spec is the same, so it ends with the release running.
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
  const before = await deps.owned(spec.leaseUuid, signal);
  const live = before.filter((c) => isInstance(c) && c.name === nameFor(c, false));
  // Set aside by an interrupted restart or update, or a leftover seed helper: never serving.
  await removeEach(
    deps,
    before.filter((c) => !live.includes(c)),
    signal,
  );
  for (const c of live) await rename(deps, c, nameFor(c, true), signal);
  await settled([stopEach(deps, live, signal), deps.create(spec, signal)]);
  dockerCrashPoint("docker.restart.after-stop");
  const replacing = new Set(live.map((c) => c.id));
  await settled([
    deps.start(spec, signal, { startStopped: false, replacing }),
    removeEach(deps, live, signal),
  ]);
  deps.log.info({ lease_uuid: spec.leaseUuid, release: spec.release }, "lease restarted");
  dockerCrashPoint("docker.restart.after-start");
}

/** Waits for every step (none is left running unobserved), then throws the first failure. */
async function settled(steps: Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(steps);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw asRestartFailure(failed.reason);
}

/** A definite failure keeps its tenant-safe message under the reason `RestartFailed`. */
function asRestartFailure(err: unknown): unknown {
  if (substrateOutcomeOf(err) !== "definite") return err;
  const cause = err as SubstrateError;
  return definite("RestartFailed", cause.tenantMessage, "restart", cause);
}
