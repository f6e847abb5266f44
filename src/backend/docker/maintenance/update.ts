import { SubstrateError, substrateOutcomeOf, type WorkloadSpec } from "../../kit/index.ts";
import { definite, engineMessage } from "../engine.ts";
import { dockerCrashPoint } from "./crash-points.ts";
import {
  isInstance,
  lastLogLines,
  type MaintenanceDeps,
  nameFor,
  notOfRelease,
  ofRelease,
  removeEach,
  rename,
  stopEach,
} from "./workload.ts";

/**
 * Update: release `current` is replaced by `next` without ever deprovisioning.
 *
 *  1. capture: the current release's containers are kept exactly as they are (same ids,
 *     image ids and config) until next verifies: they are the copy rollback restores;
 *  2. every image of next is verified (pulled if allowed) before anything changes;
 *  3. the current containers step aside (`…-r<release>`), next's are created under the
 *     instance names, mounting the same volumes;
 *  4. current stops, then next starts and is verified as a provision is (never both run);
 *  5. current's containers (and any other release's) are removed.
 *
 * A definite failure in 2–4 rolls back: next's containers are removed, current's take
 * their names back and start again, and the call throws `UpdateFailed`. Anything unsure
 * (engine gone, timeout) is thrown as ambiguous, and the kit calls again with the same
 * pair: every step is idempotent and re-reads what exists, so a re-call finishes the
 * update or rolls it back, and never leaves two releases running. Compensation restores
 * containers, not data: what the next release wrote to the volumes stays written.
 */
export async function updateWorkload(
  deps: MaintenanceDeps,
  current: WorkloadSpec,
  next: WorkloadSpec,
  signal: AbortSignal,
): Promise<void> {
  if (next.leaseUuid !== current.leaseUuid || next.release <= current.release) {
    // Nothing was touched: the current release still runs ("UpdateFailed" says so to the kit).
    throw definite("UpdateFailed", "internal error while updating", "update: next is not a later release");
  }
  dockerCrashPoint("docker.update.begin");
  const lease = current.leaseUuid;
  const found = await deps.owned(lease, signal);
  // Everything of the lease that is not next is kept until next verifies: the current
  // release, and any container an earlier interrupted attempt left (never removed early).
  const previous = notOfRelease(found, next.release);
  deps.log.info(
    {
      lease_uuid: lease,
      from_release: current.release,
      to_release: next.release,
      previous: previous.map((c) => ({ id: c.id, image: c.image })),
    },
    "updating a lease",
  );
  // A volume-seed helper a crash left behind never serves.
  await removeEach(
    deps,
    found.filter((c) => !isInstance(c)),
    signal,
  );
  try {
    await deps.ensureImages(next, signal);
    for (const c of previous) await rename(deps, c, nameFor(c, true), signal);
    await deps.create(next, signal);
    await stopEach(deps, previous, signal);
    dockerCrashPoint("docker.update.after-stop");
    await deps.start(next, signal, { startStopped: false });
  } catch (err) {
    if (substrateOutcomeOf(err) !== "definite" || signal.aborted) throw err;
    await rollBack(deps, current, next, err as SubstrateError, signal);
  }
  dockerCrashPoint("docker.update.after-start");
  await removeEach(deps, notOfRelease(await deps.owned(lease, signal), next.release), signal);
  deps.log.info({ lease_uuid: lease, release: next.release }, "lease updated");
}

/** Restores `current` after next failed definitively; always throws. */
async function rollBack(
  deps: MaintenanceDeps,
  current: WorkloadSpec,
  next: WorkloadSpec,
  cause: SubstrateError,
  signal: AbortSignal,
): Promise<never> {
  const lease = current.leaseUuid;
  deps.log.warn(
    { lease_uuid: lease, release: next.release, reason: cause.reason, err: cause.message },
    "update failed; restoring the previous release",
  );
  const found = await deps.owned(lease, signal);
  // What the failed attempt printed is read before its containers go (kept with the failure).
  const logs = await lastLogLines(deps, ofRelease(found, next.release), signal);
  // Next's containers go first, so the two releases never run at once.
  await removeEach(deps, ofRelease(found, next.release), signal);
  dockerCrashPoint("docker.update.in-rollback");
  for (const c of ofRelease(found, current.release)) await rename(deps, c, nameFor(c, false), signal);
  // Adopts the kept containers; recreates from the spec only an instance that vanished. If
  // the previous release does not run again either, its own failure is what is thrown.
  await deps.create(current, signal);
  await deps.start(current, signal, { startStopped: true });
  throw new SubstrateError("definite", "UpdateFailed", cause.tenantMessage, {
    cause,
    operatorMessage: `update to release ${next.release}: ${engineMessage(cause)}`,
    logs,
  });
}
