import { createServer, type Server } from "node:net";
import type { FastifyInstance } from "fastify";
import { splitHostPort } from "../../core/host-port.ts";

/**
 * providerd binds its API address first and serves on it last. Binding first makes the
 * bound URL (port 0 included) known before anything is built, so the callback base that
 * provisions carry is part of the config every component receives, never patched in after
 * the port is bound; a taken port fails the start before the key is unlocked or the chain
 * dialled. Connections that arrive between the two wait in the listen backlog.
 */
export interface BoundApiSocket {
  /** The address as clients reach it (0.0.0.0 and :: answer on loopback). */
  url: string;
  /** Hands the bound socket to the fully built server. */
  serve(app: FastifyInstance): Promise<void>;
  close(): Promise<void>;
}

/** `host:port`, `[v6]:port` or `:port` (all interfaces); the config check has vetted its form. */
export function listenTarget(addr: string): { host: string; port: number } {
  const split = splitHostPort(addr);
  const host = split?.host ?? "";
  return { host: host === "" ? "0.0.0.0" : host, port: Number(split?.port) };
}

export async function bindApiSocket(listenAddr: string, scheme: "http" | "https"): Promise<BoundApiSocket> {
  const target = listenTarget(listenAddr);
  const socket: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.listen({ host: target.host, port: target.port }, () => {
      socket.off("error", reject);
      resolve();
    });
  });
  const address = socket.address();
  if (address === null || typeof address === "string") throw new Error("API socket has no TCP address");
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host;
  let served: FastifyInstance | undefined;
  return {
    url: `${scheme}://${reachable}:${address.port}`,
    async serve(app) {
      await app.ready();
      await new Promise<void>((resolve, reject) => {
        app.server.once("error", reject);
        app.server.listen(socket, () => {
          app.server.off("error", reject);
          resolve();
        });
      });
      served = app;
    },
    async close() {
      // Once served, the server owns the handle (closing the app closes it); before, the socket does.
      if (served !== undefined) return;
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}
