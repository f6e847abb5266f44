import type Docker from "dockerode";
import { retry } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { SubstrateError } from "../kit/index.ts";
import type { DockerMetrics } from "./docker-metrics.ts";
import { ambiguous, definite, engineMessage, engineStatus, withPhase } from "./engine.ts";
import { LABEL } from "./names.ts";
import { type ContainerRow, failureOf, instancePhase, isUp } from "./observe.ts";
import { hasActiveHealthCheck, type ServiceModel, startOrder } from "./service-model.ts";

/**
 * Starting a lease and proving it came up. Services start in `depends_on` order (a
 * `service_healthy` dependency is waited for first). Verification then polls the engine:
 * health-checked instances must report healthy, the others must still run once
 * `startup_verify_duration` has passed since the last start (0 = check once, at once).
 * An exit or an unhealthy report is a definite failure with a curated message.
 */

const POLL_MS = 250;
/** Start calls per container when the engine's chosen host port turns out to be taken. */
const START_TRIES = 3;

export interface StartupDeps {
  docker: Docker;
  clock: Clock;
  /** Current rows of the lease's containers (ours only). */
  list: (signal: AbortSignal) => Promise<ContainerRow[]>;
  startTimeoutMs: number;
  verifyMs: number;
  /** Absolute deadline (clock ms) for the whole start, from `provision_timeout`. */
  deadlineMs: number;
  /** Operator log (start retries after a host-port collision). */
  log: Logger;
  /** Start exited instances again instead of failing on them (a release being restored). */
  startStopped?: boolean;
  /** Start outcomes and stage times (docker-metrics.ts). */
  metrics?: DockerMetrics;
}

function rowsOf(rows: readonly ContainerRow[], service: string): ContainerRow[] {
  return rows.filter((r) => r.Labels?.[LABEL.serviceName] === service);
}

function where(row: ContainerRow): string {
  return `service ${row.Labels?.[LABEL.serviceName]} instance ${row.Labels?.[LABEL.instanceIndex]}`;
}

function failIfBroken(rows: readonly ContainerRow[]): void {
  for (const row of rows) {
    const failure = failureOf(row);
    if (failure) throw definite(failure.reason, failure.message, `startup of ${row.Names?.[0] ?? row.Id}`);
  }
}

/**
 * The engine picks a published host port without knowing which ports other host processes
 * hold; when its pick is already bound, the start fails (HTTP 500) though nothing is wrong
 * with the workload. Such a failure is transient: each new start picks another port.
 */
export function isHostPortCollision(err: unknown): boolean {
  const status = engineStatus(err);
  if (status === undefined || status < 500) return false;
  return /address already in use|port is already allocated/i.test(engineMessage(err));
}

async function startOne(deps: StartupDeps, row: ContainerRow, signal: AbortSignal): Promise<void> {
  try {
    await startWithRetries(deps, row, signal);
    deps.metrics?.containerStart("success");
  } catch (err) {
    deps.metrics?.containerStart("failed");
    throw err;
  }
}

async function startWithRetries(deps: StartupDeps, row: ContainerRow, signal: AbortSignal): Promise<void> {
  try {
    await retry(
      () =>
        withPhase(deps.clock, "container start", deps.startTimeoutMs, signal, (s) =>
          deps.docker.getContainer(row.Id).start({ abortSignal: s }),
        ),
      {
        clock: deps.clock,
        attempts: START_TRIES,
        backoff: [0], // each new start picks another port at once
        signal,
        retryable: isHostPortCollision,
        onRetry: (err, attempt) =>
          // Container id, instance and engine text only: the engine names the port, no secret.
          deps.log.warn(
            { container: row.Id, instance: where(row), attempt, err: engineMessage(err) },
            "host port taken by another process; starting the container again",
          ),
      },
    );
  } catch (err) {
    const status = engineStatus(err);
    if (status === 304) return; // already running
    if (status !== undefined && status >= 400 && status < 500) {
      throw definite("ContainerStartFailed", `${where(row)} could not be started`, `start ${row.Id}`, err);
    }
    // A 5xx, a timeout, no answer, or a port collision on every try: the engine may have
    // done part of the work, so the outcome stays ambiguous and recovery settles it.
    throw ambiguous(`start ${row.Id}`, err);
  }
}

/** Waits until every instance of `service` reports healthy (or fails definitively). */
async function waitHealthy(deps: StartupDeps, service: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    const rows = rowsOf(await deps.list(signal), service);
    failIfBroken(rows);
    if (rows.length > 0 && rows.every(isUp)) return;
    await pause(deps, signal, `service ${service} did not become healthy before the startup deadline`);
  }
}

async function pause(deps: StartupDeps, signal: AbortSignal, onDeadline: string): Promise<void> {
  if (deps.clock.now() >= deps.deadlineMs) {
    throw definite("HealthCheckFailed", onDeadline, "startup deadline reached");
  }
  await deps.clock.sleep(POLL_MS, signal);
}

export async function startAndVerify(
  deps: StartupDeps,
  models: readonly ServiceModel[],
  signal: AbortSignal,
): Promise<void> {
  // Health checks are the proof where every service has one; otherwise the grace window is.
  const graceMs = models.every(hasActiveHealthCheck) ? 0 : deps.verifyMs;
  const started = deps.clock.now();
  for (const model of startOrder(models)) {
    for (const [target, condition] of Object.entries(model.dependsOn)) {
      if (condition === "service_healthy") await waitHealthy(deps, target, signal);
    }
    const rows = rowsOf(await deps.list(signal), model.name);
    if (rows.length === 0) throw ambiguous(`start ${model.name}`, new Error("no containers were created"));
    for (const row of rows) {
      if (row.State === "running") continue;
      if (row.State !== "created" && !(deps.startStopped && row.State === "exited")) failIfBroken([row]);
      await startOne(deps, row, signal);
    }
  }
  // The window opens once every container has been started: a slow engine (starts that
  // take seconds under load) must not use up the window before the last one even runs.
  const begun = deps.clock.now();
  deps.metrics?.stage("start", (begun - started) / 1000);
  await verify(deps, graceMs, begun, signal);
  deps.metrics?.stage("healthy", (deps.clock.now() - begun) / 1000);
}

async function verify(deps: StartupDeps, graceMs: number, begun: number, signal: AbortSignal): Promise<void> {
  for (;;) {
    const rows = await deps.list(signal);
    failIfBroken(rows);
    const ready = rows.every(isUp);
    const graceOver = deps.clock.now() - begun >= graceMs;
    if (ready && graceOver) return;
    const pending = rows.find((r) => instancePhase(r) === "starting");
    await pause(
      deps,
      signal,
      pending
        ? `${where(pending)} did not become healthy before the startup deadline`
        : "startup did not complete in time",
    ).catch((err) => {
      throw err instanceof SubstrateError ? err : ambiguous("startup verification", err);
    });
  }
}
