import type { FastifyInstance } from "fastify";
import { type TenantApiDeps, type TenantContext, tenantContext } from "./context.ts";
import { LogAdmission } from "./log-admission.ts";
import { registerConnectionRoute } from "./routes/connection.ts";
import { registerDataRoute } from "./routes/data.ts";
import { registerLogsRoute } from "./routes/logs.ts";
import { registerProvisionRoute } from "./routes/provision.ts";
import { registerReleasesRoute } from "./routes/releases.ts";
import { registerStatusRoute } from "./routes/status.ts";

/**
 * The tenant API: `/v1/leases/{uuid}/…` on providerd's listener. Built once by the
 * composition root from explicit dependencies; `register` adds its routes to the
 * server, `close` stops its timers (the replay-store sweep).
 */
export type { TenantApiDeps } from "./context.ts";

const SWEEP_INTERVAL_MS = 30_000;

export class TenantApi {
  readonly context: TenantContext;
  readonly logs: LogAdmission;
  #cancelSweep: (() => void) | undefined;
  #closed = false;

  constructor(deps: TenantApiDeps) {
    this.context = tenantContext(deps);
    this.logs = new LogAdmission();
    this.#scheduleSweep();
  }

  register(app: FastifyInstance): void {
    const ctx = this.context;
    registerStatusRoute(app, ctx);
    registerConnectionRoute(app, ctx);
    registerProvisionRoute(app, ctx);
    registerReleasesRoute(app, ctx);
    registerLogsRoute(app, ctx, this.logs, ctx.deps.writeTimeoutMs ?? ctx.deps.config.httpWriteTimeoutMs);
    registerDataRoute(app, ctx);
  }

  /** Chained timer: the next sweep is scheduled once this one has run. */
  #scheduleSweep(): void {
    if (this.#closed) return;
    this.#cancelSweep = this.context.deps.clock.setTimer(SWEEP_INTERVAL_MS, () => {
      this.context.auth.sweep();
      this.#scheduleSweep();
    });
  }

  close(): void {
    this.#closed = true;
    this.#cancelSweep?.();
  }
}
