import { createServer, type Server, type Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { splitHostPort } from "../../core/host-port.ts";

/**
 * providerd binds its API address first and serves on it last. Binding first makes the
 * bound URL (port 0 included) known before anything is built, so the callback base that
 * provisions carry is part of the config every component receives, never patched in after
 * the port is bound; a taken port fails the start before the key is unlocked or the chain
 * dialled. A bound socket accepts at once (libuv gives no way to wait), so connections that
 * arrive between the two are held (what they send is buffered) and handed to the server
 * when it serves (an HTTP or TLS server takes a connection handed to it); past EARLY_LIMIT
 * they are closed at once.
 */
const EARLY_LIMIT = 1_024;

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

/** Connections held while no server takes them, each with the listener that forgets it when it closes first. */
class HeldConnections {
  readonly #held = new Map<Socket, () => void>();
  static readonly #ignore = (): void => {}; // a client that gives up before a server is up

  hold(conn: Socket): void {
    if (this.#held.size >= EARLY_LIMIT) {
      conn.destroy();
      return;
    }
    const forget = () => this.#held.delete(conn);
    this.#held.set(conn, forget);
    conn.on("error", HeldConnections.#ignore).once("close", forget);
  }

  /** Gives every held connection to `app`'s server (an HTTP or TLS server takes one handed to it). */
  handTo(app: FastifyInstance): void {
    for (const [conn, forget] of this.#held) {
      conn.off("error", HeldConnections.#ignore).off("close", forget);
      app.server.emit("connection", conn);
    }
    this.#held.clear();
  }

  drop(): void {
    for (const conn of this.#held.keys()) conn.destroy();
    this.#held.clear();
  }
}

/** A listening socket whose connections go to `route` (until the caller changes that). */
async function listenOn(listenAddr: string, scheme: "http" | "https", route: (conn: Socket) => void) {
  const target = listenTarget(listenAddr);
  const socket: Server = createServer();
  socket.on("connection", route);
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
  return { socket, url: `${scheme}://${reachable}:${address.port}` };
}

const closeServer = (socket: Server) => new Promise<void>((resolve) => socket.close(() => resolve()));

export async function bindApiSocket(listenAddr: string, scheme: "http" | "https"): Promise<BoundApiSocket> {
  const held = new HeldConnections();
  const { socket, url } = await listenOn(listenAddr, scheme, (conn) => held.hold(conn));
  let served: FastifyInstance | undefined;
  return {
    url,
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
      socket.removeAllListeners("connection");
      held.handTo(app);
    },
    async close() {
      // Once served, the server owns the handle (closing the app closes it); before, the socket does.
      if (served !== undefined) return;
      held.drop();
      await closeServer(socket);
    },
  };
}

/**
 * One API address that several servers take turns serving, never closed between them: an
 * instance on PostgreSQL (ha/replicated.ts) serves as a standby, then its daemon serves when
 * it leads, and the standby again if it loses the lease. `lend()` gives a server its
 * BoundApiSocket: while served, each new connection is handed to that server; between two
 * servers, connections are held and go to the next one. So the address refuses nothing,
 * and resets nothing, at a change of role. Closing what was lent only stops its turn.
 */
export interface SharedApiSocket {
  url: string;
  lend(): BoundApiSocket;
  close(): Promise<void>;
}

export async function bindSharedApiSocket(
  listenAddr: string,
  scheme: "http" | "https",
): Promise<SharedApiSocket> {
  const held = new HeldConnections();
  let current: FastifyInstance | undefined;
  const { socket, url } = await listenOn(listenAddr, scheme, (conn) => {
    if (current === undefined) held.hold(conn);
    else current.server.emit("connection", conn);
  });
  return {
    url,
    lend() {
      let mine: FastifyInstance | undefined;
      return {
        url,
        async serve(app) {
          await app.ready();
          // An HTTP server tracks its connections (request and headers timeouts, closing
          // idle ones) from its 'listening' event; this one never listens itself.
          app.server.emit("listening");
          mine = app;
          current = app;
          held.handTo(app);
        },
        async close() {
          if (mine !== undefined && current === mine) current = undefined;
          mine = undefined;
        },
      };
    },
    async close() {
      current = undefined;
      held.drop();
      await closeServer(socket);
    },
  };
}
