import type { Server as HttpServer } from "node:http";
import { createServer, type Server } from "node:net";

/**
 * The suite's port policy. Servers a test starts bind port 0 on 127.0.0.1 and the test reads
 * the bound port back (`listenLoopback`, or a process's ready line). Only where a port must be
 * known before a process starts (a config file naming it, a restart on the same port) is one
 * picked in advance, always with `pickFreePort`: the kernel's choice for port 0, released at
 * once. That leaves a small window in which another process may take it, which is why it is
 * the exception.
 */
export async function pickFreePort(): Promise<number> {
  const srv = createServer();
  const { port } = await listenLoopback(srv);
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Binds `server` to 127.0.0.1 on a kernel-chosen port; resolves with the port and its http URL. */
export function listenLoopback(server: Server | HttpServer): Promise<{ port: number; url: string }> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      const address = server.address();
      if (address === null || typeof address === "string") {
        reject(new Error(`server bound to an unexpected address: ${String(address)}`));
        return;
      }
      resolve({ port: address.port, url: `http://127.0.0.1:${address.port}` });
    });
  });
}

/** The port of a URL such as a ready line's `http://127.0.0.1:40123`. */
export function portOf(url: string): number {
  const port = Number(new URL(url).port);
  if (!Number.isInteger(port) || port <= 0) throw new Error(`no port in ${url}`);
  return port;
}
