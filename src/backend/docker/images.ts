import type Docker from "dockerode";
import { Counter, Histogram, type Registry } from "prom-client";
import type { Clock } from "../../core/clock.ts";
import { isFredError } from "../../core/errors.ts";
import { imageRepository } from "../../core/manifest/index.ts";
import type { Logger } from "../../log.ts";
import type { ImagePullPolicy } from "./config.ts";
import { ambiguous, definite, engineMessage, engineStatus, isNotFound, withPhase } from "./engine.ts";

/**
 * Makes a service's image available and pins it. `resolveImage` (provision and update)
 * follows `image_pull_policy`: `always` pulls the manifest's reference and pins the repo
 * digest it resolved to, `if-not-present` uses an image already on the host. The pin is an
 * immutable reference: `<name>@sha256:…` when the engine knows the image's repo digest,
 * else the image ID `sha256:…` (a locally built image never came from a registry).
 * `ensurePinned` (restart, rollback, re-creating a release) never resolves a tag again:
 * it uses the pinned image, pulling it by digest only when the host lost it. Both also
 * read the image's declared VOLUME paths, which decide where durable disk is mounted.
 */

export interface ImageFacts {
  id: string;
  /** Declared VOLUME paths, sorted. */
  volumes: string[];
  /** The immutable reference containers are created from (repo digest, else image ID). */
  pinned: string;
}

/** Pull credentials for one registry host (a manifest service's `credentials`). */
export interface PullAuth {
  host: string;
  username: string;
  password: string;
}

/** Why a pull was refused, as far as a tenant may know: never the registry's own text. */
export type PullFailureKind = "not_found" | "unauthorized" | "timeout" | "failed";

const PULL_MESSAGE: Record<PullFailureKind, string> = {
  not_found: "the container image was not found in its registry",
  unauthorized: "the registry refused to serve the container image (unauthorized)",
  timeout: "the container image could not be pulled in time",
  failed: "the container image could not be pulled",
};
const PINNED_GONE = "the release's pinned image is no longer on this host and has no registry digest";

/** Pull duration and failures by kind, on the backend's metrics registry. */
export class PullMetrics {
  readonly duration: Histogram<"outcome">;
  readonly failures: Counter<"reason">;
  readonly pulls: Counter<"outcome">;

  constructor(registry: Registry | undefined) {
    const registers = registry ? [registry] : [];
    this.pulls = new Counter({
      name: "fred_docker_image_pulls_total",
      help: "Image pulls from a registry, by outcome (success or failed)",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.duration = new Histogram({
      name: "fred_docker_image_pull_seconds",
      help: "Time of image pulls from a registry, by outcome (ok or failed)",
      labelNames: ["outcome"] as const,
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.failures = new Counter({
      name: "fred_docker_image_pull_failures_total",
      help: "Image pulls that failed, by reason (not_found, unauthorized, timeout, failed)",
      labelNames: ["reason"] as const,
      registers,
    });
  }
}

export interface ImageDeps {
  docker: Docker;
  clock: Clock;
  log: Logger;
  pullTimeoutMs: number;
  metrics: PullMetrics;
}

/**
 * Sorts an engine or registry refusal into a kind. The engine answers 404 for an unknown
 * repository or tag and relays the registry's 401/403; older engines put the same words
 * in a 500 or in the progress stream, so the text is read too (operator-side only: it
 * never leaves this function except as the kind).
 */
export function pullFailureKind(err: unknown): PullFailureKind {
  if (isFredError(err, "ERR_DOCKER_IMAGE_PULL_TIMEOUT")) return "timeout";
  const status = engineStatus(err);
  const text = engineMessage(err).toLowerCase();
  if (status === 401 || status === 403) return "unauthorized";
  if (/unauthorized|authentication required|no basic auth credentials|access denied|denied/.test(text))
    return "unauthorized";
  if (status === 404 || /not found|manifest unknown|does not exist|name unknown/.test(text))
    return "not_found";
  return "failed";
}

/** Docker's familiar form of a repository: docker.io/library/x and docker.io/x read as x. */
function familiar(repo: string): string {
  return repo.replace(/^(?:docker\.io|index\.docker\.io)\//, "").replace(/^library\//, "");
}

/** The image's repo digest for `ref`'s repository, else its ID: what containers are created from. */
export function pinOf(ref: string, id: string, repoDigests: readonly string[]): string {
  const repo = familiar(imageRepository(ref));
  const match = repoDigests.find((d) => familiar(imageRepository(d)) === repo && d.includes("@sha256:"));
  return match ?? id;
}

/** True for a reference that names content, not a movable tag. */
function isImmutable(ref: string): boolean {
  return ref.includes("@sha256:") || /^sha256:[0-9a-f]{64}$/.test(ref);
}

async function inspectImage(deps: ImageDeps, ref: string): Promise<Docker.ImageInspectInfo | undefined> {
  try {
    return await deps.docker.getImage(ref).inspect();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw ambiguous(`inspect image ${ref}`, err);
  }
}

function factsOf(ref: string, info: Docker.ImageInspectInfo): ImageFacts {
  return {
    id: info.Id,
    volumes: Object.keys(info.Config?.Volumes ?? {}).sort(),
    pinned: isImmutable(ref) ? ref : pinOf(ref, info.Id, info.RepoDigests ?? []),
  };
}

async function pullStream(
  docker: Docker,
  ref: string,
  auth: PullAuth | undefined,
  signal: AbortSignal,
): Promise<void> {
  // The engine keys Docker Hub's credentials by its legacy index address.
  const serveraddress = auth?.host === "docker.io" ? "https://index.docker.io/v1/" : auth?.host;
  const authconfig = auth && { username: auth.username, password: auth.password, serveraddress };
  const stream: NodeJS.ReadableStream = await docker.pull(ref, {
    abortSignal: signal,
    ...(authconfig ? { authconfig } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, events: { error?: string }[]) => {
      const failed = events?.find((e) => typeof e.error === "string");
      if (err) reject(err);
      else if (failed) reject(new Error(failed.error));
      else resolve();
    });
  });
}

/**
 * Pulls `ref` within `image_pull_timeout`. A refused or timed-out pull created nothing a
 * tenant depends on: definite `ImagePullFailed` whose message names only the kind. The
 * registry's text goes to the operator log (credentials are never part of it: they travel
 * in the engine's auth header, never in the reference or the message).
 */
async function pull(deps: ImageDeps, ref: string, auth: PullAuth | undefined, signal: AbortSignal) {
  deps.log.info({ image: ref }, "pulling image");
  const started = deps.clock.now();
  try {
    await withPhase(deps.clock, "image pull", deps.pullTimeoutMs, signal, (s) =>
      pullStream(deps.docker, ref, auth, s),
    );
    deps.metrics.duration.observe({ outcome: "ok" }, (deps.clock.now() - started) / 1000);
    deps.metrics.pulls.inc({ outcome: "success" });
  } catch (err) {
    deps.metrics.duration.observe({ outcome: "failed" }, (deps.clock.now() - started) / 1000);
    deps.metrics.pulls.inc({ outcome: "failed" });
    if (signal.aborted) throw ambiguous(`pull ${ref}`, err);
    const kind = pullFailureKind(err);
    deps.metrics.failures.inc({ reason: kind });
    deps.log.warn({ image: ref, reason: kind, err: engineMessage(err) }, "image pull failed");
    throw definite("ImagePullFailed", PULL_MESSAGE[kind], `pull ${ref} (${kind})`, err);
  }
}

async function inspectAfterPull(deps: ImageDeps, ref: string): Promise<ImageFacts> {
  const info = await inspectImage(deps, ref);
  if (!info) throw definite("ImagePullFailed", PULL_MESSAGE.failed, `pull ${ref}: image absent after pull`);
  return factsOf(ref, info);
}

/** Provision and update: the manifest's reference, resolved per `policy` and pinned. */
export async function resolveImage(
  deps: ImageDeps,
  args: { ref: string; policy: ImagePullPolicy; auth: PullAuth | undefined; signal: AbortSignal },
): Promise<ImageFacts> {
  const { ref, policy, auth, signal } = args;
  if (policy === "if-not-present" || isImmutable(ref)) {
    const present = await inspectImage(deps, ref);
    if (present) return factsOf(ref, present);
  }
  await pull(deps, ref, auth, signal);
  return inspectAfterPull(deps, ref);
}

/**
 * Restart, rollback and re-creation: the release's pinned image, never its tag. A repo
 * digest the host lost is pulled again by digest (same content by definition); an image
 * ID cannot be fetched from anywhere, so its loss is a definite failure.
 */
export async function ensurePinned(
  deps: ImageDeps,
  args: { pinned: string; auth: PullAuth | undefined; signal: AbortSignal },
): Promise<ImageFacts> {
  const { pinned, auth, signal } = args;
  const present = await inspectImage(deps, pinned);
  if (present) return factsOf(pinned, present);
  if (!pinned.includes("@sha256:"))
    throw definite("ImagePullFailed", PINNED_GONE, `pinned ${pinned} missing`);
  await pull(deps, pinned, auth, signal);
  return inspectAfterPull(deps, pinned);
}
