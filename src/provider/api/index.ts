import type { FastifyInstance } from "fastify";
import { SHELL_CLOSE } from "../../core/exec-channel.ts";
import type { ProviderConfig } from "../config/index.ts";
import { BackendCatalog } from "./backend-catalog.ts";
import { type TenantApiDeps, type TenantContext, tenantContext } from "./context.ts";
import { EventHub, LeaseEventPublisher } from "./event-hub.ts";
import { LogAdmission } from "./log-admission.ts";
import { LogFollows } from "./log-follows.ts";
import { registerOpenApiRoute } from "./openapi.ts";
import { registerConnectionRoute } from "./routes/connection.ts";
import { registerDataRoute } from "./routes/data.ts";
import { registerEventsRoute, WS_LIMITS } from "./routes/events.ts";
import { registerLogsRoute } from "./routes/logs.ts";
import { registerRestartRoute } from "./routes/maintenance.ts";
import { registerProviderRoute } from "./routes/provider.ts";
import { registerProvisionRoute } from "./routes/provision.ts";
import { registerReleasesRoute } from "./routes/releases.ts";
import { registerRestoreRoute } from "./routes/restore.ts";
import { registerShellRoute } from "./routes/shell.ts";
import { registerStatusRoute } from "./routes/status.ts";
import { registerUpdateRoute } from "./routes/update.ts";
import { registerUsageRoute } from "./routes/usage.ts";
import type { RelayLimits } from "./shell-relay.ts";
import { ShellSessions } from "./shell-sessions.ts";
import { registerWebSocketRoutes } from "./websockets.ts";

/**
 * The tenant API: `/v1/leases/{uuid}/…` on providerd's listener. Built once by the
 * composition root from explicit dependencies; `register` adds its routes to the
 * server, `events` is where the lifecycle reports status changes for the WebSocket
 * stream, `backends` is where the `/stats` poll leaves each round for `GET /v1/provider`,
 * `close` stops its timers (the replay-store sweep).
 */
export type { TenantApiDeps } from "./context.ts";
export { tenantDiagnostics } from "./diagnostics.ts";
export { ApiError } from "./errors.ts";
export { EventHub } from "./event-hub.ts";
export type { BlockSignal } from "./tenant-lease-reads.ts";

const SWEEP_INTERVAL_MS = 30_000;

/** A shell session's limits: the operator's (tenant_shell_*) and two fixed bounds. */
function shellLimits(config: ProviderConfig): RelayLimits {
  return {
    idleMs: config.tenantShellIdleTimeoutMs,
    maxDurationMs: config.tenantShellMaxDurationMs,
    outputBytesPerSecond: config.tenantShellOutputBytesPerSecond,
    maxBufferedBytes: 1024 * 1024,
    resizeIntervalMs: 100,
  };
}

export class TenantApi {
  readonly context: TenantContext;
  readonly logs: LogAdmission;
  /** Open `logs?follow=true` streams (caps; closed with 1001 at shutdown). */
  readonly follows: LogFollows;
  readonly hub: EventHub;
  readonly events: LeaseEventPublisher;
  readonly backends: BackendCatalog;
  /** Open tenant shell sessions (caps, shutdown). */
  readonly shells: ShellSessions;
  #cancelSweep: (() => void) | undefined;
  #closed = false;
  /** A hub the root lent is the root's to close. */
  readonly #ownsHub: boolean;

  constructor(deps: TenantApiDeps) {
    this.context = tenantContext(deps);
    this.logs = new LogAdmission();
    this.follows = new LogFollows();
    this.hub = deps.hub ?? new EventHub({ clock: deps.clock, ...deps.events });
    this.#ownsHub = deps.hub === undefined;
    this.events = new LeaseEventPublisher(this.hub, this.context.leases, deps.logger);
    this.events.listen(deps);
    this.backends = new BackendCatalog(deps.config.backends);
    this.shells = new ShellSessions({
      perLease: deps.config.tenantShellSessionsPerLease,
      total: deps.config.tenantShellSessionsTotal,
    });
    this.#scheduleSweep();
  }

  register(app: FastifyInstance): void {
    const ctx = this.context;
    registerStatusRoute(app, ctx);
    registerConnectionRoute(app, ctx);
    registerProvisionRoute(app, ctx);
    registerReleasesRoute(app, ctx);
    registerRestoreRoute(app, ctx);
    registerDataRoute(app, ctx, this.events);
    registerRestartRoute(app, ctx);
    registerUpdateRoute(app, ctx);
    registerUsageRoute(app, ctx);
    registerWebSocketRoutes(
      app,
      // Shutdown: every stream hears its close code before the listener closes.
      () => {
        this.hub.close(1001, "server shutting down");
        this.follows.close(1001, "server shutting down");
        this.shells.closeAll(SHELL_CLOSE.shutdown, "server shutting down");
      },
      [
        (scoped) => registerEventsRoute(scoped, ctx, this.hub, { ...WS_LIMITS, ...ctx.deps.eventTimings }),
        (scoped) => registerLogsRoute(scoped, ctx, this.logs, this.follows),
        (scoped) => registerShellRoute(scoped, ctx, this.hub, this.shells, shellLimits(ctx.deps.config)),
      ],
    );
    registerProviderRoute(app, ctx.deps.config, this.backends);
    registerOpenApiRoute(app);
  }

  /** Chained timer: the next sweep is scheduled once this one has run. */
  #scheduleSweep(): void {
    if (this.#closed) return;
    this.#cancelSweep = this.context.deps.clock.setTimer(SWEEP_INTERVAL_MS, () => {
      void this.context.auth.sweep().finally(() => this.#scheduleSweep());
    });
  }

  close(): void {
    this.context.leases.close();
    this.#closed = true;
    this.#cancelSweep?.();
    if (this.#ownsHub) this.hub.close();
  }
}
