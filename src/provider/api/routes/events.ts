import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import type { ChainLease } from "../../../chain/port.ts";
import { withDeadline } from "../../../core/async/index.ts";
import { FredError } from "../../../core/errors.ts";
import { leaseUuidParam } from "../auth.ts";
import { routeRead } from "../backend-route.ts";
import type { EventTimings, TenantContext } from "../context.ts";
import { type DiagnosticsLookup, lookupDiagnostics } from "../diagnostics.ts";
import { ApiError } from "../errors.ts";
import type { EventFrame, EventHub, Notice, Subscriber } from "../event-hub.ts";
import { eventsQuerySchema } from "../schemas/lease.ts";
import { keepAlive, upgradeRoute } from "../websockets.ts";

/**
 * `GET /v1/leases/{uuid}/events`: a push-only WebSocket of the lease's status frames.
 * The token (Authorization header, or `?token=` since browsers cannot set headers on an
 * upgrade) and the lease are checked before the upgrade, so refusals are plain HTTP
 * answers. A connection starts with a snapshot of the current status (or, with `since`,
 * the frames it missed, or a reset then a snapshot), then receives frames as they happen.
 * Pings every 30 s, closed when no pong came for 40 s; client data closes it (1008, or
 * 1009 past 512 bytes); at the caps or after one hour it closes with 1013; shutdown 1001.
 * A client that stops reading is cut off once 64 KiB wait for it: memory never grows.
 */
export const WS_LIMITS: EventTimings = {
  maxMessageBytes: 512,
  pingIntervalMs: 30_000,
  pongTimeoutMs: 40_000,
  lifetimeMs: 60 * 60_000,
  maxBufferedBytes: 64 * 1024,
};

interface Upgrade {
  lease: ChainLease;
  since: number | undefined;
  notices: boolean;
}

/** How long a connection's first snapshot waits for the backend's record. */
const SNAPSHOT_READ_MS = 5_000;
const snapshotTimedOut = () =>
  new FredError("ERR_BACKEND_TIMEOUT", `events snapshot: no backend answer within ${SNAPSHOT_READ_MS} ms`);

function eventsQuery(req: FastifyRequest) {
  const query = eventsQuerySchema.safeParse(req.query ?? {});
  if (!query.success) {
    throw new ApiError("ERR_API_BAD_QUERY", 400, query.error.issues[0]?.message ?? "invalid query");
  }
  return query.data;
}

/** Registered inside the tenant API's WebSocket scope (websockets.ts), which closes the hub at shutdown. */
export function registerEventsRoute(
  app: FastifyInstance,
  ctx: TenantContext,
  hub: EventHub,
  limits = WS_LIMITS,
): void {
  const { clock, clients, logger } = ctx.deps;

  async function authorize(req: FastifyRequest, reply: FastifyReply): Promise<Upgrade> {
    const uuid = leaseUuidParam(req);
    const { token: queryToken, since: rawSince, notices } = eventsQuery(req);
    if (req.headers.authorization === undefined && queryToken !== undefined) {
      req.headers.authorization = `Bearer ${queryToken}`;
    }
    const since = rawSince === undefined ? undefined : Number(rawSince);
    const claims = await ctx.auth.authenticate(req, reply, uuid, { kind: "access", replay: false });
    const lease = await ctx.leases.owned(claims);
    return { lease, since, notices: notices !== undefined && notices !== "0" && notices !== "false" };
  }

  async function snapshot(lease: ChainLease): Promise<EventFrame> {
    const seq = hub.currentSeq;
    let status = hub.lastStatus(lease.uuid);
    if (status === undefined) {
      // A snapshot never waits on a slow backend: past the budget its status is "unknown".
      const found = await withDeadline(clock, SNAPSHOT_READ_MS, undefined, snapshotTimedOut, (signal) =>
        lookupDiagnostics(routeRead(ctx.deps, clients, lease.uuid), clients, lease.uuid, signal),
      ).catch((): DiagnosticsLookup => ({ kind: "unknown" }));
      status = found.kind === "found" ? found.diagnostics.status : "unknown";
    }
    return {
      type: "snapshot",
      lease_uuid: lease.uuid,
      status,
      timestamp: new Date(clock.now()).toISOString(),
      seq,
      state: lease.state,
    };
  }

  function serve(socket: WebSocket, up: Upgrade): void {
    const timers: (() => void)[] = [];
    const stop = () => {
      for (const cancel of timers.splice(0)) cancel();
      hub.unsubscribe(sub);
    };
    // Cut off without a closing handshake (the peer is not reading, or not answering).
    const drop = () => {
      stop();
      socket.terminate();
    };
    // Frames that arrive while the opening frames are prepared wait here, in order.
    let backlog: (EventFrame | Notice)[] | undefined = [];
    let lastSeq = 0;
    const write = (frame: EventFrame | Notice) => {
      if (socket.readyState !== socket.OPEN) return;
      if (typeof frame.seq === "number") {
        if (frame.seq <= lastSeq) return;
        lastSeq = frame.seq;
      }
      if (socket.bufferedAmount > limits.maxBufferedBytes) {
        logger.info({ lease_uuid: up.lease.uuid }, "event subscriber too slow; disconnected");
        ctx.counters.eventDropped();
        drop();
        return;
      }
      socket.send(JSON.stringify(frame));
    };
    const sub: Subscriber = {
      leaseUuid: up.lease.uuid,
      optedIn: up.since !== undefined || up.notices,
      send: (frame) => (backlog === undefined ? write(frame) : backlog.push(frame)),
      close: (code, reason) => socket.close(code, reason),
    };
    socket.on("close", stop);
    // The shared WebSocket server takes messages up to the shell's size: this stream's own cap is here.
    socket.on("message", (data: Buffer) =>
      data.length > limits.maxMessageBytes
        ? socket.close(1009, "message too large")
        : socket.close(1008, "client messages not allowed"),
    );
    if (hub.subscribe(sub) !== "ok") {
      socket.close(1013, "too many connections");
      return;
    }
    timers.push(
      keepAlive(socket, clock, limits, {
        dead: drop,
        expired: () => socket.close(1013, "max connection lifetime reached"),
      }),
    );

    void (async () => {
      const resume = up.since === undefined ? undefined : hub.resume(up.lease.uuid, up.since);
      if (resume?.kind === "replay") {
        for (const f of resume.frames) write(f);
      } else {
        if (resume?.kind === "reset") write({ type: "reset" });
        write(await snapshot(up.lease));
      }
      const waiting = backlog ?? [];
      backlog = undefined;
      for (const f of waiting) write(f);
    })().catch((err) => {
      logger.warn({ err, lease_uuid: up.lease.uuid }, "event stream setup failed");
      socket.close(1011, "internal error");
    });
  }
  upgradeRoute(app, { url: "/v1/leases/:lease_uuid/events", logger, authorize, serve });
}
