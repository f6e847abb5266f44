import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Server as TlsServer } from "node:tls";
import Fastify, { type FastifyInstance } from "fastify";
import { Registry } from "prom-client";
import { fredVersion } from "../../version.ts";
import type { BoundApiSocket } from "../http/bind.ts";
import type { HealthReport } from "../http/health.ts";
import { type ListenerOptions, readTls } from "../http/listener.ts";
import { registerJournaledRequests, registerLeaderGauges } from "../http/metrics.ts";
import { NO_JSON_SCHEMAS } from "../http/no-json-schemas.ts";
import { TLS_MIN_VERSION, TlsReloader } from "../http/tls-reload.ts";
import { Forwarder, type ForwardingSources } from "./forwarder.ts";

/**
 * What a standby serves on the API address while another instance leads (issue #36):
 * `/health`, `/readyz` (200 while the database answers: a standby can serve) and
 * `/metrics` itself, and every other request, WebSocket upgrades included, forwarded to
 * the leader's advertised address. So a load balancer may send tenants and backends to any
 * instance: whatever a standby receives (a status read, an upload, a restart, a backend's
 * callback) is carried out once, by the leader; while a takeover is under way, it waits
 * here for the new leader (ha/forwarder.ts), and what the leader's address refuses is
 * journaled in the database for it (ha/inbox.ts).
 */
export interface StandbySources extends ForwardingSources {
  providerUuid: string;
  /** Whether the leader lease has been read since start (until then the leader is unknown). */
  leaseRead: () => boolean;
  /** Whether the database answers now. */
  databaseOk: () => Promise<boolean>;
  listener: ListenerOptions;
}

export interface StandbyServer {
  url: string;
  /** Reads the TLS pair again (SIGHUP; file changes are watched); false without TLS or when refused. */
  reloadTls(): boolean;
  close(): Promise<void>;
}

/** How long a closing standby lets its requests under way finish. */
const CLOSE_GRACE_MS = 2_000;

/** Serves on `socket` (its turn of the instance's shared API address: http/bind.ts) until closed. */
export async function serveStandby(socket: BoundApiSocket, s: StandbySources): Promise<StandbyServer> {
  const l = s.listener;
  const tls = l.tls === undefined ? undefined : readTls(l.tls);
  const app = Fastify({
    logger: false,
    // A held request's body is read only once it goes to a leader: its allowance includes
    // the hold (Node checks it every 30 s, too slowly for a test to see it go by).
    requestTimeout: l.readTimeoutMs + s.holdMs,
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
  if (s.inbox !== undefined) registerJournaledRequests(registry, s.inbox.outcomes);
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
  const forwarder = new Forwarder(s);
  app.all("/*", (req, reply) => {
    reply.hijack();
    forwarder.request(req.raw, reply.raw);
  });
  app.server.on("upgrade", (req: IncomingMessage, client: Duplex, head: Buffer) =>
    forwarder.upgrade(req, client, head),
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
      // The daemon serves now (or the instance stops): requests still held go to it.
      forwarder.handOver();
      await socket.close();
      setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref();
      await app.close();
    },
  };
}
