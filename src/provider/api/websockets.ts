import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";

/**
 * The tenant API's one @fastify/websocket registration. The plugin listens to the
 * server's `upgrade` event, so a second registration would route every upgrade twice:
 * every WebSocket route (events, logs?follow) is registered inside this one scope.
 * `maxPayload` bounds what a client may send (our streams are push-only); at shutdown
 * `preClose` runs before the listener closes, so every stream hears 1001 first.
 */
export function registerWebSocketScope(
  app: FastifyInstance,
  opts: { maxPayload: number; preClose: () => void },
  routes: (scoped: FastifyInstance) => void,
): void {
  void app.register(async (scoped) => {
    await scoped.register(websocket, {
      options: { maxPayload: opts.maxPayload },
      preClose: (done) => {
        opts.preClose();
        done();
      },
    });
    routes(scoped);
  });
}
