import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Caddy's on-demand TLS `ask` endpoint: before ordering a certificate for a name it has no
 * certificate for, Caddy asks `GET <url>?domain=<name>` and proceeds only on a 2xx. It runs
 * on its own loopback listener (never the HMAC contract listener, never reachable from the
 * network), so an outsider can neither query the gate nor make the proxy order
 * certificates for arbitrary names: every name goes through `approve`.
 */

export interface AskServer {
  /** The URL to configure as Caddy's `on_demand.ask`. */
  url: string;
  close(): Promise<void>;
}

export async function startAskServer(opts: {
  host: string;
  port: number;
  path: string;
  approve: (domain: string) => Promise<boolean>;
  onError: (err: unknown) => void;
}): Promise<AskServer> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://ask.invalid");
    const domain = url.searchParams.get("domain");
    if (req.method !== "GET" || url.pathname !== opts.path || domain === null) {
      res.writeHead(404).end();
      return;
    }
    opts
      .approve(domain.toLowerCase())
      .then((ok) => res.writeHead(ok ? 200 : 403).end())
      .catch((err: unknown) => {
        opts.onError(err);
        res.writeHead(503).end();
      });
  });
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host}:${port}${opts.path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
