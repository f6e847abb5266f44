import type Docker from "dockerode";
import type { Clock } from "../../../core/clock.ts";
import type { Logger } from "../../../log.ts";
import type { WorkloadSpec } from "../../kit/index.ts";
import { ambiguous, engineMessage, engineStatus, withPhase } from "../engine.ts";
import { demuxLogStream } from "../logs.ts";
import { asideName, instanceKey, instanceName, LABEL } from "../names.ts";

/**
 * What restart and update need from the Docker substrate, and the container facts they
 * decide on. The substrate keeps the one implementation of create, start + verify, stop
 * and remove (with their stale-handle checks and expected-death bookkeeping); the
 * maintenance workflows only order those steps and read back what exists.
 */

/** One of the lease's containers, re-inspected and confirmed ours (lease and storage id). */
export interface OwnedContainer {
  id: string;
  /** Without the engine's leading slash. */
  name: string;
  labels: Record<string, string>;
  /** Image id the container runs (pinned: a moved tag does not change it). */
  image: string;
}

export interface MaintenanceDeps {
  docker: Docker;
  clock: Clock;
  log: Logger;
  renameTimeoutMs: number;
  /** The lease's containers (any release, any state) that pass the stale-handle check. */
  owned(leaseUuid: string, signal: AbortSignal): Promise<OwnedContainer[]>;
  /** Creates the spec's release (idempotent: same-named containers of the same release are adopted). */
  create(spec: WorkloadSpec, signal: AbortSignal): Promise<void>;
  /**
   * Starts and verifies the spec's release only; a definite failure stops the lease's
   * containers. `startStopped`: instances that exited are started again (a release the
   * backend stopped itself, being restored) instead of counting as failed. `replacing`:
   * ids of the same release's old containers, being removed meanwhile (not verified).
   */
  start(
    spec: WorkloadSpec,
    signal: AbortSignal,
    opts: { startStopped: boolean; replacing?: ReadonlySet<string> },
  ): Promise<void>;
  /** Verifies (pulls if allowed) every image the spec runs, before anything is changed. */
  ensureImages(spec: WorkloadSpec, signal: AbortSignal): Promise<void>;
  stopContainer(id: string, signal: AbortSignal): Promise<void>;
  removeContainer(id: string, signal: AbortSignal): Promise<void>;
}

/** A workload instance container (volume-seed helpers carry no service label). */
export function isInstance(c: OwnedContainer): boolean {
  return c.labels[LABEL.serviceName] !== undefined;
}

export function ofRelease(containers: readonly OwnedContainer[], release: number): OwnedContainer[] {
  return containers.filter((c) => isInstance(c) && c.labels[LABEL.release] === String(release));
}

/** Instance containers of every release but `release`. */
export function notOfRelease(containers: readonly OwnedContainer[], release: number): OwnedContainer[] {
  return containers.filter((c) => isInstance(c) && c.labels[LABEL.release] !== String(release));
}

/** The container's name as its release's instance: canonical, or aside during an update. */
export function nameFor(c: OwnedContainer, aside: boolean): string {
  const lease = c.labels[LABEL.leaseUuid] as string;
  const service = c.labels[LABEL.serviceName] as string;
  const index = Number(c.labels[LABEL.instanceIndex]);
  return aside
    ? asideName(lease, service, index, Number(c.labels[LABEL.release]))
    : instanceName(lease, service, index);
}

/** Renames one container; already named so is success. */
export async function rename(
  deps: MaintenanceDeps,
  c: OwnedContainer,
  name: string,
  signal: AbortSignal,
): Promise<void> {
  if (c.name === name) return;
  try {
    await withPhase(deps.clock, "container rename", deps.renameTimeoutMs, signal, (s) =>
      deps.docker.getContainer(c.id).rename({ name, abortSignal: s }),
    );
  } catch (err) {
    // 409: the name is taken (by what we are about to move out of the way, or not ours):
    // the effect is unknown to us, so the caller's command stays pending.
    throw ambiguous(`rename ${c.id} to ${name} (${engineStatus(err) ?? "no answer"})`, err);
  }
}

/** Stops each container (already stopped or gone is success). */
export async function stopEach(
  deps: MaintenanceDeps,
  containers: readonly OwnedContainer[],
  signal: AbortSignal,
): Promise<void> {
  for (const c of containers) await deps.stopContainer(c.id, signal);
}

/** Lines of each container's output kept for a failure (as the kit keeps a provision's). */
const FAILURE_LOG_LINES = 100;
const FAILURE_LOG_TIMEOUT_MS = 15_000;

/**
 * The last output lines of each container by `<service>/<instance>`, best effort: a
 * container whose logs cannot be read is left out (logged), never a reason to fail.
 */
export async function lastLogLines(
  deps: MaintenanceDeps,
  containers: readonly OwnedContainer[],
  signal: AbortSignal,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const c of containers) {
    const key = instanceKey(c.labels[LABEL.serviceName] as string, Number(c.labels[LABEL.instanceIndex]));
    try {
      const raw = await withPhase(
        deps.clock,
        "container logs",
        FAILURE_LOG_TIMEOUT_MS,
        signal,
        async (bounded) =>
          (await deps.docker.getContainer(c.id).logs({
            stdout: true,
            stderr: true,
            follow: false,
            tail: FAILURE_LOG_LINES,
            abortSignal: bounded,
          })) as unknown as Buffer,
      );
      out[key] = demuxLogStream(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw)));
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      deps.log.warn({ container: c.id, err: engineMessage(err), code }, "failed release's logs unavailable");
    }
  }
  return out;
}

export async function removeEach(
  deps: MaintenanceDeps,
  containers: readonly OwnedContainer[],
  signal: AbortSignal,
): Promise<void> {
  for (const c of containers) await deps.removeContainer(c.id, signal);
}
