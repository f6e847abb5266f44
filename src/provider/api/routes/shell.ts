import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import { isFredError } from "../../../core/errors.ts";
import { type ExecQuery, parseExecQuery, SHELL_SUBPROTOCOL } from "../../../core/exec-channel.ts";
import { backendReadFailure, ownerOrRefuse, routeRead } from "../backend-route.ts";
import { authorizeLease, type TenantContext } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import type { EventHub } from "../event-hub.ts";
import { type RelayLimits, relayShell } from "../shell-relay.ts";
import type { ShellSessions, ShellSlot } from "../shell-sessions.ts";
import { upgradeRoute } from "../websockets.ts";

/**
 * `GET /v1/leases/{uuid}/shell`: a command in one instance of the tenant's ACTIVE lease,
 * over a WebSocket speaking `v5.channel.k8s.io` (src/core/exec-channel.ts). Everything
 * that can refuse does so before the upgrade, as a plain HTTP answer with the error
 * envelope: the operator's switch, the query, the single-use token (header or `?token=`),
 * the lease, the session caps, and the backend's own answer — providerd opens the
 * backend's session first and upgrades the tenant only once it runs. Every session ends
 * with one audit line in the log and a `shell_session` notice on the lease's event stream.
 */
interface Upgrade {
  uuid: string;
  tenant: string;
  target: ExecQuery;
  backend: WebSocket;
  slot: ShellSlot;
  startedAt: number;
}

function shellQuery(req: FastifyRequest): { token: string | undefined; target: ExecQuery } {
  const { token, ...rest } = (req.query ?? {}) as Record<string, unknown>;
  if (token !== undefined && typeof token !== "string") {
    throw new ApiError("ERR_API_BAD_QUERY", 400, "token may be given once");
  }
  try {
    return { token, target: parseExecQuery(rest) };
  } catch (err) {
    throw new ApiError("ERR_API_BAD_QUERY", 400, (err as Error).message);
  }
}

/** What the backend's refusal means for the tenant; its text stays in the log. */
function backendRefusal(err: unknown): Error {
  if (isFredError(err, "ERR_BACKEND_TIMEOUT")) return refuse.timeout();
  if (isFredError(err, "ERR_BACKEND_STATUS")) {
    const { status, code } = (err.details ?? {}) as { status?: number; code?: string };
    if (status === 404 && code === "unknown_target") {
      return new ApiError("ERR_API_SHELL_UNKNOWN_TARGET", 404, "the lease has no such service or instance");
    }
    if (status === 404) return refuse.notProvisioned();
    if (status === 409 && code === "not_ready") {
      return new ApiError("ERR_API_SHELL_NOT_READY", 409, "the lease's workload is not ready", {
        reason: "not_ready",
      });
    }
    if (status === 501) {
      return new ApiError(
        "ERR_API_SHELL_UNSUPPORTED",
        501,
        "this lease's backend does not support shell sessions",
        {
          reason: "unsupported",
        },
      );
    }
  }
  return backendReadFailure(err);
}

export function registerShellRoute(
  app: FastifyInstance,
  ctx: TenantContext,
  hub: EventHub,
  sessions: ShellSessions,
  limits: RelayLimits,
): void {
  const { clock, clients, config, logger } = ctx.deps;

  async function authorize(req: FastifyRequest, reply: FastifyReply): Promise<Upgrade> {
    if (!config.tenantShellEnabled) {
      throw new ApiError("ERR_API_SHELL_DISABLED", 403, "shell sessions are disabled on this provider", {
        reason: "shell_disabled",
      });
    }
    if (!req.ws) throw new ApiError("ERR_API_BAD_QUERY", 400, "expected a WebSocket upgrade request");
    const offered = String(req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim());
    if (!offered.includes(SHELL_SUBPROTOCOL)) {
      throw new ApiError("ERR_API_BAD_QUERY", 400, `the WebSocket subprotocol must be ${SHELL_SUBPROTOCOL}`);
    }
    const { token, target } = shellQuery(req);
    if (req.headers.authorization === undefined && token !== undefined) {
      req.headers.authorization = `Bearer ${token}`;
    }
    const need = { kind: "access", replay: true } as const;
    const { uuid, claims } = await authorizeLease(ctx, req, reply, need, "LEASE_STATE_ACTIVE");
    const slot = sessions.admit(uuid);
    // The client going away while the backend is asked abandons the backend's session too.
    const gone = new AbortController();
    const onGone = () => gone.abort(new Error("client went away"));
    req.raw.socket.once("close", onGone);
    try {
      const client = ownerOrRefuse(routeRead(ctx.deps, clients, uuid));
      const backend = await client.openExec(uuid, target, gone.signal).catch((err) => {
        throw backendRefusal(err);
      });
      req.raw.socket.off("close", onGone);
      // Upgrade refused or the client gone before it: nothing of the session may stay.
      req.raw.socket.once("close", () => {
        if (!served.has(req)) {
          backend.terminate();
          slot.release();
        }
      });
      return { uuid, tenant: claims.tenant, target, backend, slot, startedAt: clock.now() };
    } catch (err) {
      req.raw.socket.off("close", onGone);
      slot.release();
      throw err;
    }
  }

  const served = new WeakSet<FastifyRequest>();

  function serve(socket: WebSocket, up: Upgrade, req: FastifyRequest): void {
    served.add(req);
    const relay = relayShell(socket, up.backend, limits, clock);
    const untrack = sessions.track((code, reason) => relay.stop(code, reason));
    void relay.done.then((r) => {
      untrack();
      up.slot.release();
      const audit = {
        tenant: up.tenant,
        lease_uuid: up.uuid,
        service: up.target.service ?? null,
        instance: up.target.instance,
        argv: up.target.argv,
        tty: up.target.tty,
        started_at: new Date(up.startedAt).toISOString(),
        duration_ms: clock.now() - up.startedAt,
        exit_code: r.exitCode ?? null,
        bytes_in: r.bytesIn,
        bytes_out: r.bytesOut,
        ended: r.ended,
      };
      logger.info(audit, "shell session ended");
      hub.notify(up.uuid, { type: "shell_session", ...audit });
    });
  }

  upgradeRoute(app, { url: "/v1/leases/:lease_uuid/shell", logger, authorize, serve });
}
