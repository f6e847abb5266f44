import type Docker from "dockerode";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { ambiguous, classify, definite, engineMessage, isNotFound, withPhase } from "./engine.ts";

/**
 * Makes an image available locally: a present image is used as is (no registry needs to
 * be reachable), a missing one is pulled within `image_pull_timeout`. Also reads the
 * image's declared VOLUME paths, which decide where durable disk is mounted.
 */

export interface ImageFacts {
  id: string;
  /** Declared VOLUME paths, sorted. */
  volumes: string[];
}

const PULL_FAILED = "the container image could not be pulled";

async function inspectImage(docker: Docker, ref: string): Promise<ImageFacts | undefined> {
  try {
    const info = await docker.getImage(ref).inspect();
    return { id: info.Id, volumes: Object.keys(info.Config?.Volumes ?? {}).sort() };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw ambiguous(`inspect image ${ref}`, err);
  }
}

async function pull(docker: Docker, ref: string, signal: AbortSignal): Promise<void> {
  let stream: NodeJS.ReadableStream;
  try {
    stream = await docker.pull(ref, { abortSignal: signal });
  } catch (err) {
    throw classify(err, `pull ${ref}`, "ImagePullFailed", PULL_FAILED);
  }
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, events: { error?: string }[]) => {
      const failed = events?.find((e) => typeof e.error === "string");
      if (err || failed)
        reject(definite("ImagePullFailed", PULL_FAILED, `pull ${ref}`, err ?? failed?.error));
      else resolve();
    });
  });
}

export async function ensureImage(args: {
  docker: Docker;
  clock: Clock;
  log: Logger;
  ref: string;
  pullTimeoutMs: number;
  signal: AbortSignal;
}): Promise<ImageFacts> {
  const { docker, clock, log, ref, pullTimeoutMs, signal } = args;
  const present = await inspectImage(docker, ref);
  if (present) return present;
  log.info({ image: ref }, "pulling image");
  try {
    await withPhase(clock, "image pull", pullTimeoutMs, signal, (s) => pull(docker, ref, s));
  } catch (err) {
    if (signal.aborted) throw ambiguous(`pull ${ref}`, err);
    // A pull that fails or times out created nothing a tenant depends on: definite.
    log.warn({ image: ref, err: engineMessage(err) }, "image pull failed");
    throw definite("ImagePullFailed", PULL_FAILED, `pull ${ref}`, err);
  }
  const pulled = await inspectImage(docker, ref);
  if (!pulled) throw definite("ImagePullFailed", PULL_FAILED, `pull ${ref}: image absent after pull`);
  return pulled;
}
