import type { FastifyReply, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import { RateBuckets } from "../../../core/async/index.ts";
import type { LogStreamEvent } from "../../../core/backend-contract/index.ts";
import { isFredError } from "../../../core/errors.ts";
import { leaseUuidParam } from "../auth.ts";
import { backendReadFailure, ownerOrRefuse, routeRead } from "../backend-route.ts";
import type { TenantContext } from "../context.ts";
import { ApiError, refuse } from "../errors.ts";
import { type FollowSlot, LOG_CLOSE, type LogFollows, type TenantLogFrame } from "../log-follows.ts";
import { keepAlive } from "../websockets.ts";
import { followMode, parseTail } from "./logs-query.ts";

/**
 * `GET /v1/leases/{uuid}/logs?follow=true` upgraded to a WebSocket: the lease's log lines
 * as its containers write them. Everything that can refuse happens before the upgrade,
 * so refusals are plain HTTP answers with the tenant envelope: the query (400), the token
 * (Authorization header, or `?token=` since browsers cannot set headers on an upgrade;
 * an access token, not replay-protected, 401/403), the lease (404), the caps (503), and
 * the backend's own answer to the stream (404 not provisioned, 501 it cannot stream, 503
 * it did not answer in time). Then each backend event becomes a frame: the pinned line
 * frame `{service, instance, ts, stream, line}`, `{type:"instance", …}` when a container
 * was replaced, and `{type:"dropped", …}` counting lines past a stream's byte rate. The
 * stream ends with 4000 when the lease's workload is gone, 1011 when the backend's
 * stream broke, 1001 at shutdown, 1013 after the lifetime; a client that sends data gets
 * 1008, one that stops reading is cut off (terminated) once `maxBufferedBytes` wait.
 */
interface Opened {
  slot: FollowSlot;
  events: AsyncGenerator<LogStreamEvent>;
  stop: AbortController;
}

function queryToken(req: FastifyRequest): string | undefined {
  const raw = (req.query as Record<string, unknown> | undefined)?.token;
  if (raw === undefined || typeof raw === "string") return raw;
  throw new ApiError("ERR_API_BAD_QUERY", 400, "token may be given once");
}

/** The backend's refusal of the stream, in the tenant's words. */
function openFailure(err: unknown): Error {
  if (err instanceof ApiError) return err;
  if (isFredError(err, "ERR_BACKEND_STATUS") && err.details?.status === 501)
    return new ApiError(
      "ERR_API_LOG_FOLLOW_UNSUPPORTED",
      501,
      "this lease's backend cannot stream logs; read them with GET logs?tail=N",
    );
  if (isFredError(err, "ERR_BACKEND_TIMEOUT")) return refuse.unavailable("ERR_API_BACKEND_UNAVAILABLE", err);
  return backendReadFailure(err);
}

export function logFollowHandlers(ctx: TenantContext, follows: LogFollows) {
  const { clock, clients, logger } = ctx.deps;
  const limits = follows.limits;

  async function open(req: FastifyRequest, reply: FastifyReply): Promise<Opened> {
    const uuid = leaseUuidParam(req);
    if (followMode(req) !== "follow")
      throw new ApiError("ERR_API_BAD_QUERY", 400, "a WebSocket upgrade of logs needs follow=true");
    // A stream may start with no tail at all (tail=0: only new lines, e.g. after a reconnect).
    const tail = (req.query as Record<string, unknown>).tail === "0" ? 0 : parseTail(req);
    const token = queryToken(req);
    if (req.headers.authorization === undefined && token !== undefined)
      req.headers.authorization = `Bearer ${token}`;
    const claims = await ctx.auth.authenticate(req, reply, uuid, { kind: "access", replay: false });
    await ctx.leases.owned(claims);
    const client = ownerOrRefuse(routeRead(ctx.deps, clients, uuid), "logs not found");
    const slot = follows.reserve(uuid);
    const stop = new AbortController();
    // Whatever happens to the upgrade from here, the socket's end frees the slot and the backend stream.
    req.raw.socket.once("close", () => {
      stop.abort(new Error("tenant went away"));
      slot.release();
    });
    try {
      const events = await client.followLogs(uuid, tail, stop.signal);
      if (events === undefined) throw refuse.notProvisioned("logs not found");
      return { slot, events, stop };
    } catch (err) {
      stop.abort(err);
      slot.release();
      throw openFailure(err);
    }
  }

  function serve(socket: WebSocket, up: Opened): void {
    const uuid = up.slot.leaseUuid;
    const timers: (() => void)[] = [];
    const buckets = new RateBuckets(limits.bytesPerSecond, limits.burstBytes, clock, { maxKeys: 1_024 });
    const dropped = new Map<string, Extract<TenantLogFrame, { type: "dropped" }>>();
    let cancelDropReport: (() => void) | undefined;
    const finish = () => {
      for (const cancel of timers.splice(0)) cancel();
      cancelDropReport?.();
      up.stop.abort(new Error("stream closed"));
      up.slot.release();
    };
    const drop = () => {
      finish();
      socket.terminate();
    };
    const close = (code: number, reason: string) => {
      if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
        socket.close(code, reason);
      finish();
    };
    up.slot.close = close;
    socket.on("close", finish);
    socket.on("message", () => close(1008, "client messages not allowed"));

    const send = (frame: TenantLogFrame): boolean => {
      if (socket.readyState !== socket.OPEN) return false;
      if (socket.bufferedAmount > limits.maxBufferedBytes) {
        logger.info({ lease_uuid: uuid }, "log follower too slow; disconnected");
        drop();
        return false;
      }
      socket.send(JSON.stringify(frame));
      return true;
    };
    const reportDrops = () => {
      cancelDropReport = undefined;
      for (const frame of dropped.values()) send(frame);
      dropped.clear();
    };
    const line = (event: Extract<LogStreamEvent, { line: string }>) => {
      const key = `${event.service}/${event.instance}/${event.stream}`;
      const bytes = Buffer.byteLength(event.line);
      if (!buckets.consume(key, bytes).allowed) {
        const d = dropped.get(key) ?? {
          type: "dropped" as const,
          service: event.service,
          instance: event.instance,
          stream: event.stream,
          lines: 0,
          bytes: 0,
        };
        d.lines++;
        d.bytes += bytes;
        dropped.set(key, d);
        cancelDropReport ??= clock.setTimer(limits.dropReportMs, reportDrops);
        return;
      }
      const { service, instance, ts, stream } = event;
      send({ service, instance, ts, stream, line: event.line });
    };

    timers.push(
      keepAlive(socket, clock, limits, {
        dead: drop,
        expired: () => close(1013, "max connection lifetime reached"),
      }),
    );

    void (async () => {
      for await (const event of up.events) {
        if (socket.readyState !== socket.OPEN) return;
        if ("line" in event) line(event);
        else if (event.type === "instance") send(event);
        else if (event.type === "end") {
          reportDrops();
          return close(LOG_CLOSE.leaseEnded, "lease ended");
        }
      }
      close(1011, "log stream interrupted");
    })().catch((err: unknown) => {
      if (socket.readyState !== socket.OPEN) return;
      logger.warn({ err, lease_uuid: uuid }, "log follow stream failed");
      close(1011, "log stream interrupted");
    });
  }

  return { authorize: open, serve };
}
