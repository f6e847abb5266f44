import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import { SHELL_LIMITS, SHELL_SUBPROTOCOL } from "../../core/exec-channel.ts";

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
    for (const register of routes) register(scoped);
  });
}
