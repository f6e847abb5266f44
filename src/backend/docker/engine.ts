import Docker from "dockerode";
import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { type ErrorCode, FredError } from "../../core/errors.ts";
import { SubstrateError } from "../kit/index.ts";

/**
 * The dockerode client and the two habits every engine call shares: a named timeout phase
 * driven by the injected clock (so the work is really cancelled, not just abandoned), and
 * one mapping from engine failures to the kit's definite/ambiguous contract. Engine text
 * stays in operator logs; tenants get the curated message passed by the caller.
 */

/** `unix:///path`, `tcp://host:port` or `http(s)://host:port` → dockerode options. */
export function dockerOptions(dockerHost: string): Docker.DockerOptions {
  if (dockerHost.startsWith("unix://")) return { socketPath: dockerHost.slice("unix://".length) };
  const m = /^(tcp|http|https):\/\/([^:/]+|\[[^\]]+\]):(\d+)\/?$/.exec(dockerHost);
  if (!m)
    throw new FredError("ERR_CONFIG", `docker_host ${JSON.stringify(dockerHost)} is not unix:// or tcp://`);
  return { host: m[2] as string, port: Number(m[3]), protocol: m[1] === "https" ? "https" : "http" };
}

export function connectDocker(dockerHost: string): Docker {
  return new Docker(dockerOptions(dockerHost));
}

/** HTTP status the engine answered with, when it answered at all. */
export function engineStatus(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

export function isNotFound(err: unknown): boolean {
  return engineStatus(err) === 404;
}

/** The engine's own message, for operator logs only. */
export function engineMessage(err: unknown): string {
  const json = (err as { json?: { message?: unknown } } | null)?.json;
  if (json && typeof json.message === "string") return json.message;
  return err instanceof Error ? err.message : String(err);
}

/** Each named engine phase and the code its timeout carries. */
const PHASE_TIMEOUT = {
  "engine ping": "ERR_DOCKER_ENGINE_PING_TIMEOUT",
  "engine info": "ERR_DOCKER_ENGINE_INFO_TIMEOUT",
  "image pull": "ERR_DOCKER_IMAGE_PULL_TIMEOUT",
  "image inspect": "ERR_DOCKER_IMAGE_INSPECT_TIMEOUT",
  "image gc": "ERR_DOCKER_IMAGE_GC_TIMEOUT",
  "container create": "ERR_DOCKER_CONTAINER_CREATE_TIMEOUT",
  "container start": "ERR_DOCKER_CONTAINER_START_TIMEOUT",
  "container stop": "ERR_DOCKER_CONTAINER_STOP_TIMEOUT",
  "container remove": "ERR_DOCKER_CONTAINER_REMOVE_TIMEOUT",
  "container rename": "ERR_DOCKER_CONTAINER_RENAME_TIMEOUT",
  "container logs": "ERR_DOCKER_CONTAINER_LOGS_TIMEOUT",
  "container list": "ERR_DOCKER_CONTAINER_LIST_TIMEOUT",
  "volume seed": "ERR_DOCKER_VOLUME_SEED_TIMEOUT",
  "volume owner": "ERR_DOCKER_VOLUME_OWNER_TIMEOUT",
  "seed helper create": "ERR_DOCKER_SEED_HELPER_CREATE_TIMEOUT",
  "seed helper remove": "ERR_DOCKER_SEED_HELPER_REMOVE_TIMEOUT",
} as const satisfies Record<string, ErrorCode>;
export type DockerPhase = keyof typeof PHASE_TIMEOUT;

/**
 * Runs `work` with a signal that aborts when the parent does or when `ms` elapse on the
 * clock; a timeout surfaces as FredError `ERR_DOCKER_<PHASE>_TIMEOUT` (retryable).
 */
export function withPhase<T>(
  clock: Clock,
  phase: DockerPhase,
  ms: number,
  parent: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = () =>
    new FredError(PHASE_TIMEOUT[phase], `docker ${phase} did not finish within ${ms} ms`, {
      retryable: true,
    });
  return withDeadline(clock, ms, parent, timeout, work);
}

/** The effect may or may not have happened (timeout, engine unreachable, lost reply). */
export function ambiguous(what: string, err: unknown): SubstrateError {
  return new SubstrateError("ambiguous", "Internal", "internal error while provisioning", {
    cause: err,
    operatorMessage: `${what}: ${engineMessage(err)}`,
  });
}

/**
 * A close's teardown that failed: ambiguous (the close is retried), with the reason and
 * text the tenant sees on the closing lease meanwhile; engine text goes to the operator.
 */
export function cleanupTrouble(
  reason: string,
  tenantMessage: string,
  what: string,
  err: unknown,
): SubstrateError {
  return new SubstrateError("ambiguous", reason, tenantMessage, {
    cause: err,
    operatorMessage: `${what}: ${engineMessage(err)}`,
  });
}

/** A definite refusal with a tenant-safe reason/message; engine text goes to the operator. */
export function definite(reason: string, tenantMessage: string, what: string, err?: unknown): SubstrateError {
  return new SubstrateError("definite", reason, tenantMessage, {
    cause: err,
    operatorMessage: err === undefined ? what : `${what}: ${engineMessage(err)}`,
  });
}

/**
 * Classifies an engine failure of a call that creates or starts something: an answer in
 * the 4xx range is a definite refusal; no answer, a 5xx or a timeout may hide an effect.
 */
export function classify(err: unknown, what: string, reason: string, tenantMessage: string): SubstrateError {
  if (err instanceof SubstrateError) return err;
  const status = engineStatus(err);
  if (status !== undefined && status >= 400 && status < 500)
    return definite(reason, tenantMessage, what, err);
  return ambiguous(what, err);
}
