import type { Failure } from "./journal/journal.ts";
import { SubstrateError } from "./substrate.ts";

/**
 * What a closing lease shows while its teardown keeps failing (GET /provisions/{uuid}:
 * status `deprovisioning` with this reason). The close itself is never given up: each
 * recovery pass retries it, because a volume left behind is disk the provider loses.
 *
 * - VolumeDeletionInProgress: the substrate says its volume deletion has not finished;
 * - VolumeCleanupExhausted: it still has not after VOLUME_CLEANUP_ATTEMPTS tries (the
 *   operator is told at error level; retries go on);
 * - CleanupFailed: anything else of the teardown (routes, containers, network, retention).
 */
export const VOLUME_CLEANUP_ATTEMPTS = 5;

export const VOLUME_CLEANUP_EXHAUSTED = "VolumeCleanupExhausted";
const VOLUME_DELETION_IN_PROGRESS = "VolumeDeletionInProgress";
const CLEANUP_FAILED: Failure = {
  reason: "CleanupFailed",
  message: "cleanup of the closed lease failed; the provider retries",
};

/** `attempts` counts failed teardowns of this close, this one included. */
export function teardownFailure(err: unknown, attempts: number): Failure {
  if (!(err instanceof SubstrateError) || err.reason !== VOLUME_DELETION_IN_PROGRESS) return CLEANUP_FAILED;
  if (attempts < VOLUME_CLEANUP_ATTEMPTS) return { reason: err.reason, message: err.tenantMessage };
  return {
    reason: VOLUME_CLEANUP_EXHAUSTED,
    message: `the lease's volume could not be deleted after ${attempts} attempts; the provider keeps retrying`,
  };
}
