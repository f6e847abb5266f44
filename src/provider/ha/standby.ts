import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Server as TlsServer } from "node:tls";
import Fastify, { type FastifyInstance } from "fastify";
import { Registry } from "prom-client";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { fredVersion } from "../../version.ts";
import type { BoundApiSocket } from "../http/bind.ts";
import type { HealthReport } from "../http/health.ts";
import { type ListenerOptions, readTls } from "../http/listener.ts";
import { registerLeaderGauges } from "../http/metrics.ts";
import { NO_JSON_SCHEMAS } from "../http/no-json-schemas.ts";
import { TLS_MIN_VERSION, TlsReloader } from "../http/tls-reload.ts";
import type { LeaderState } from "./leadership.ts";

// The builtins by getBuiltinModule, as elsewhere in providerd (see reconciler/control.ts).
const http = process.getBuiltinModule("node:http");
const https = process.getBuiltinModule("node:https");

/**
 * What a standby serves on the API address while another instance leads (issue #36):
 * `/health`, `/readyz` (200 while the database answers: a standby can serve) and
 * `/metrics` itself, and every other request, WebSocket upgrades included, forwarded to
 * the leader's advertised address. So a load balancer may send tenants and backends to any
 * instance: whatever a standby receives (a status read, an upload, a restart, a backend's
 * callback) is carried out once, by the leader. With no live leader (a takeover under way)
 * the answer is 503 with Retry-After, which tenant tools and backends already retry.
 */
export interface StandbySources {
  providerUuid: string;
  instance: string;
  leadership: () => LeaderState;
  /** Where the leader serves (undefined: none live). */
  leaderAddress: () => string | undefined;
  /** Whether the leader lease has been read since start (until then the leader is unknown). */
  leaseRead: () => boolean;
  /** Whether the database answers now. */
  databaseOk: () => Promise<boolean>;
  listener: ListenerOptions;
  clock: Clock;
  logger: Logger;
}

export interface StandbyServer {
  url: string;
  /** Reads the TLS pair again (SIGHUP; file changes are watched); false without TLS or when refused. */
  reloadTls(): boolean;
  close(): Promise<void>;
}

/** How long a closing standby lets its requests under way finish. */
const CLOSE_GRACE_MS = 2_000;
/** Marks a forwarded request, so an instance never forwards one again (no loops between instances). */
const FORWARDED_BY = "x-fred-forwarded-by";
/** Hop-by-hop headers, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
]);

/** Serves on `socket` (its turn of the instance's shared API address: http/bind.ts) until closed. */
export async function serveStandby(socket: BoundApiSocket, s: StandbySources): Promise<StandbyServer> {
  const l = s.listener;
  const tls = l.tls === undefined ? undefined : readTls(l.tls);
  const app = Fastify({
    logger: false,
    requestTimeout: l.readTimeoutMs,
    keepAliveTimeout: l.idleTimeoutMs,
    // A request on a kept-alive connection while closing is still forwarded, not refused.
    return503OnClosing: false,
    schemaController: NO_JSON_SCHEMAS,
    ...(tls === undefined ? {} : { https: { ...tls, minVersion: TLS_MIN_VERSION } }),
  }) as unknown as FastifyInstance;
  // Bodies are forwarded as they arrive, never parsed here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_req, _payload, done) => done(null));

  const registry = new Registry();
  registerLeaderGauges(registry, s.leadership);
  const report = async (): Promise<HealthReport> => {
    const ok = await s.databaseOk();
    const state = s.leadership();
    return {
      status: ok ? "healthy" : "unhealthy",
      provider_uuid: s.providerUuid,
      role: state.role,
      instance: s.instance,
      leader: state.leader ?? null,
      version: fredVersion().version,
      commit: fredVersion().commit ?? null,
      checks: {
        database: ok ? { status: "healthy" } : { status: "unhealthy", message: "database unreachable" },
      },
      stats: { in_flight_provisions: 0 },
    };
  };
  app.get("/health", async (_req, reply) => reply.code(200).send(await report()));
  // Ready to serve as a standby once it knows who leads. An instance that leads but still
  // answers here is starting its daemon: not ready until the daemon answers instead.
  app.get("/readyz", async (_req, reply) => {
    const r = await report();
    if (!s.leaseRead()) {
      r.checks.leader_lease = { status: "unhealthy", message: "the leader lease has not been read yet" };
      return reply.code(503).send(r);
    }
    return reply.code(r.status === "healthy" && r.role === "standby" ? 200 : 503).send(r);
  });
  app.get("/metrics", async (_req, reply) =>
    reply
      .code(200)
      .header("content-type", registry.contentType)
      .send(await registry.metrics()),
  );
  app.all("/*", (req, reply) => {
    reply.hijack();
    forward(req.raw, reply.raw, s);
  });
  app.server.on("upgrade", (req: IncomingMessage, client: Duplex, head: Buffer) =>
    forwardUpgrade(req, client, head, s),
  );
  // A standby may serve for months: a renewed certificate is picked up as the daemon's is.
  const reloader =
    l.tls === undefined
      ? undefined
      : new TlsReloader(l.tls, app.server as unknown as TlsServer, s.clock, s.logger);
  reloader?.watch();
  app.addHook("onClose", async () => reloader?.close());
  await socket.serve(app);
  return {
    url: socket.url,
    reloadTls: () => reloader?.reload() ?? false,
    // Closed once this instance's daemon serves (or it stops): new connections already go
    // to the daemon, idle kept-alive ones close now, requests under way may finish for
    // CLOSE_GRACE_MS (a forward to a leader that froze or died is cut then; its client retries).
    close: async () => {
      await socket.close();
      setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref();
      await app.close();
    },
  };
}

/** The leader's origin for this request, or why there is none (answered 503 by the caller). */
function upstream(req: IncomingMessage, s: StandbySources): URL | undefined {
  if (req.headers[FORWARDED_BY] !== undefined) return undefined;
  // This instance leads and its daemon is starting: nobody serves yet.
  if (s.leadership().leader === s.instance) return undefined;
  const address = s.leaderAddress();
  return address === undefined ? undefined : new URL(address);
}

function forwardedHeaders(req: IncomingMessage, s: StandbySources): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  const peer = req.socket.remoteAddress ?? "";
  const prior = req.headers["x-forwarded-for"];
  headers["x-forwarded-for"] = prior === undefined ? peer : `${String(prior)}, ${peer}`;
  headers[FORWARDED_BY] = s.instance;
  return headers;
}

const NO_LEADER = JSON.stringify({
  error: "no providerd instance leads right now; retry shortly",
  code: 503,
});

function refuse(res: import("node:http").ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(503, { "content-type": "application/json", "retry-after": "2" }).end(NO_LEADER);
}

function forward(req: IncomingMessage, res: import("node:http").ServerResponse, s: StandbySources): void {
  const target = upstream(req, s);
  if (target === undefined) {
    req.resume();
    refuse(res);
    return;
  }
  const client = target.protocol === "https:" ? https : http;
  const out = client.request(
    {
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: forwardedHeaders(req, s),
    },
    (answer) => {
      const headers: IncomingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (!HOP_BY_HOP.has(name)) headers[name] = value;
      res.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(res);
    },
  );
  // A leader that stopped answering (frozen, partitioned) gets what a client would give it.
  out.setTimeout(s.listener.readTimeoutMs + s.listener.writeTimeoutMs, () =>
    out.destroy(new Error("the leader did not answer in time")),
  );
  out.on("error", (err) => {
    // The leader went away mid-request (a takeover): the client retries, as after any 503.
    s.logger.debug({ err: err.message }, "standby: forwarding to the leader failed");
    refuse(res);
  });
  res.on("close", () => {
    if (!res.writableFinished) out.destroy();
  });
  req.pipe(out);
}

/** An upgrade nobody can take now: 503, then the connection closes whatever the client does. */
function refuseUpgrade(client: Duplex): void {
  if (client.destroyed) return;
  client.write(
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 2\r\ncontent-length: ${NO_LEADER.length}\r\nconnection: close\r\n\r\n${NO_LEADER}`,
  );
  (client as Socket).destroySoon();
}

/** A WebSocket upgrade (the event stream, live logs, a shell): the request head, then bytes both ways. */
function forwardUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, s: StandbySources): void {
  const target = upstream(req, s);
  if (target === undefined) {
    refuseUpgrade(client);
    return;
  }
  const headers = forwardedHeaders(req, s);
  headers.connection = "Upgrade";
  headers.upgrade = req.headers.upgrade;
  const lib = target.protocol === "https:" ? https : http;
  const out = lib.request({
    protocol: target.protocol,
    hostname: target.hostname,
    port: target.port,
    method: req.method,
    path: req.url,
    headers,
  });
  out.on("upgrade", (answer, leader, leaderHead) => {
    const lines = [`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}`];
    for (let i = 0; i < answer.rawHeaders.length; i += 2)
      lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
    client.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (leaderHead.length > 0) client.write(leaderHead);
    if (head.length > 0) leader.write(head);
    leader.pipe(client).pipe(leader);
    const end = () => {
      leader.destroy();
      client.destroy();
    };
    leader.on("error", end);
    client.on("error", end);
    leader.on("close", end);
    client.on("close", end);
  });
  // The leader answered without upgrading (a refusal: 401, 404, 409…): pass its answer on.
  out.on("response", (answer) => {
    const lines = [`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage}`];
    for (let i = 0; i < answer.rawHeaders.length; i += 2) {
      const name = answer.rawHeaders[i]!;
      if (!HOP_BY_HOP.has(name.toLowerCase())) lines.push(`${name}: ${answer.rawHeaders[i + 1]}`);
    }
    lines.push("connection: close");
    client.write(`${lines.join("\r\n")}\r\n\r\n`);
    // Closed once the answer is out, whether or not the client closes its side.
    answer.on("data", (chunk: Buffer) => client.write(chunk));
    answer.on("close", () => (client as Socket).destroySoon());
  });
  out.on("error", () => refuseUpgrade(client));
  client.on("error", () => out.destroy());
  out.end();
}
