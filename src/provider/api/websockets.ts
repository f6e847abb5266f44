import type { IncomingMessage } from "node:http";
import websocket from "@fastify/websocket";
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from "fastify";
import type { WebSocket } from "ws";
import type { Clock } from "../../core/clock.ts";
import { SHELL_LIMITS, SHELL_SUBPROTOCOL } from "../../core/exec-channel.ts";
import type { Logger } from "../../log.ts";
import { upgradeAccepted } from "../http/api-metrics.ts";
import { ApiError, sendApiError } from "./errors.ts";

/**
 * The tenant API's one WebSocket server. @fastify/websocket listens for the HTTP server's
 * `upgrade` events once per registration, so a second registration would route every
 * upgrade twice: every route that upgrades is registered inside this one scope. Its
 * largest message is the shell's (64 KiB); a route that allows less checks its own size
 * (the event stream closes with 1009 past 512 bytes). `preClose` runs at shutdown,
 * before the listener closes, so every stream can say 1001 first.
 */
export function registerWebSocketRoutes(
  app: FastifyInstance,
  preClose: () => void,
  routes: readonly ((scoped: FastifyInstance) => void)[],
): void {
  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  void app.register(async (scoped) => {
    await scoped.register(websocket, {
      options: {
        maxPayload: SHELL_LIMITS.maxFrameBytes,
        perMessageDeflate: false,
        // A Kubernetes client may offer several channel protocols: the shell speaks v5.
        handleProtocols: (offered) =>
          offered.has(SHELL_SUBPROTOCOL) ? SHELL_SUBPROTOCOL : ([...offered][0] ?? false),
      },
      preClose: (done) => {
        preClose();
        done();
      },
    });
    // A hijacked reply never reaches onResponse: the accepted upgrade is counted here.
    scoped.websocketServer.on("connection", (_socket: WebSocket, raw: IncomingMessage) =>
      upgradeAccepted(raw),
    );
    for (const register of routes) register(scoped);
  });
}

/**
 * A WebSocket route whose every refusal is a plain HTTP answer: `authorize` runs before the
 * upgrade (its ApiError becomes the envelope), and what it returns is handed to `serve`
 * with the upgraded socket. `handler` serves the same URL without an upgrade (logs'
 * plain form); without one, a request that does not upgrade is answered 400 after
 * `authorize` has had its say (a bad token is still a 401).
 */
export function upgradeRoute<U>(
  app: FastifyInstance,
  o: {
    url: string;
    logger: Logger;
    authorize: (req: FastifyRequest, reply: FastifyReply) => Promise<U>;
    serve: (socket: WebSocket, up: U, req: FastifyRequest) => void;
    handler?: RouteHandlerMethod;
  },
): void {
  const upgrades = new WeakMap<FastifyRequest, U>();
  app.route({
    method: "GET",
    url: o.url,
    preValidation: async (req, reply) => {
      if (o.handler !== undefined && !req.ws) return;
      try {
        upgrades.set(req, await o.authorize(req, reply));
      } catch (err) {
        return sendApiError(reply, err, o.logger);
      }
    },
    handler:
      o.handler ??
      (async (_req, reply) =>
        sendApiError(
          reply,
          new ApiError("ERR_API_BAD_QUERY", 400, "expected a WebSocket upgrade request"),
          o.logger,
        )),
    wsHandler: (socket, req) => {
      const up = upgrades.get(req);
      if (up === undefined) socket.close(1011, "internal error");
      else o.serve(socket, up, req);
    },
  });
}

export interface KeepAliveTimings {
  pingIntervalMs: number;
  pongTimeoutMs: number;
  lifetimeMs: number;
}

/**
 * A long-lived stream's liveness: a ping every `pingIntervalMs`, `dead` when no pong came
 * for `pongTimeoutMs` (the peer is gone or not reading: cut it off), `expired` once the
 * connection has lived `lifetimeMs`. Returns the function that stops all three.
 */
export function keepAlive(
  socket: WebSocket,
  clock: Clock,
  t: KeepAliveTimings,
  on: { dead: () => void; expired: () => void },
): () => void {
  let cancelPong = clock.setTimer(t.pongTimeoutMs, on.dead);
  const onPong = () => {
    cancelPong();
    cancelPong = clock.setTimer(t.pongTimeoutMs, on.dead);
  };
  socket.on("pong", onPong);
  const ping = () => {
    if (socket.readyState === socket.OPEN) socket.ping();
    cancelPing = clock.setTimer(t.pingIntervalMs, ping);
  };
  let cancelPing = clock.setTimer(t.pingIntervalMs, ping);
  const cancelLifetime = clock.setTimer(t.lifetimeMs, on.expired);
  return () => {
    cancelPing();
    cancelPong();
    cancelLifetime();
    socket.off("pong", onPong);
  };
}
