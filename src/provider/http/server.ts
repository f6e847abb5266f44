import type { Server as TlsServer } from "node:tls";
import Fastify, { type FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import type { TenantApi } from "../api/index.ts";
import { CALLBACK_PATH, type CallbackIngressOptions, registerCallbackIngress } from "../callbacks/ingress.ts";
import { installApiMetrics } from "./api-metrics.ts";
import {
  clientErrorAnswer,
  connectRefused,
  expectationFailed,
  frameworkErrorAnswer,
} from "./client-errors.ts";
import { ClientIp, installEdge } from "./edge.ts";
import { type HealthSources, healthReport, isReady } from "./health.ts";
import { type ListenerOptions, readTls } from "./listener.ts";
import { NO_JSON_SCHEMAS } from "./no-json-schemas.ts";
import { recordCertificateExpiry } from "./tls-expiry.ts";
import { TLS_MIN_VERSION, TlsReloader } from "./tls-reload.ts";
import { registerWorkloadsRoute, type WorkloadsSources } from "./workloads.ts";

/**
 * providerd's HTTP listener: operational endpoints, the backend callback route and the
 * tenant API (`/v1/leases/…`).
 * Errors leave as `{"error": "...", "code": <status>}`; internal detail is logged, not sent.
 * HTTPS (TLS 1.2 or newer) when tls_cert_file/tls_key_file are set.
 */
export interface HttpServerOptions {
  health: HealthSources;
  workloads: WorkloadsSources;
  callbacks: CallbackIngressOptions;
  /** The tenant API; absent in tests of the operational routes alone. */
  tenant?: TenantApi;
  metrics: Registry;
  listener: ListenerOptions;
  clock: Clock;
  logger: Logger;
}

export interface ProviderServer {
  app: FastifyInstance;
  /** Serves the certificate files' current content (SIGHUP); false when the listener is plain HTTP or the pair is refused. */
  reloadTls(): boolean;
}

export function buildHttpServer(o: HttpServerOptions): ProviderServer {
  const l = o.listener;
  const tls = l.tls === undefined ? undefined : readTls(l.tls);
  const app = Fastify({
    logger: false,
    bodyLimit: l.maxRequestBodySize,
    requestTimeout: l.readTimeoutMs,
    keepAliveTimeout: l.idleTimeoutMs,
    return503OnClosing: true,
    clientErrorHandler: clientErrorAnswer,
    frameworkErrors: frameworkErrorAnswer,
    schemaController: NO_JSON_SCHEMAS,
    ...(tls === undefined ? {} : { https: { ...tls, minVersion: TLS_MIN_VERSION } }),
  }) as unknown as FastifyInstance;
  app.server.on("checkExpectation", expectationFailed);
  app.server.on("connect", connectRefused);
  installApiMetrics(app, o.metrics);
  installEdge(app, {
    clock: o.clock,
    clientIp: new ClientIp(l.trustedProxies),
    rateLimit: l.rateLimit,
    corsOrigins: l.corsOrigins,
    writeTimeoutMs: l.writeTimeoutMs,
    exemptPaths: new Set([CALLBACK_PATH]),
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: "not found", code: 404 }));
  app.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
    const status =
      err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    const message =
      status === 413 ? "request body too large" : status === 500 ? "internal error" : "bad request";
    if (status === 500) o.logger.error({ err }, "request failed");
    return reply.code(status).send({ error: message, code: status });
  });

  app.get("/health", async (_req, reply) => reply.code(200).send(await healthReport(o.health)));
  app.get("/readyz", async (_req, reply) => {
    const report = await healthReport(o.health);
    return reply.code(isReady(report, o.health) ? 200 : 503).send(report);
  });
  app.get("/metrics", async (_req, reply) =>
    reply
      .code(200)
      .header("content-type", o.metrics.contentType)
      .send(await o.metrics.metrics()),
  );
  registerWorkloadsRoute(app, o.workloads);
  registerCallbackIngress(app, o.callbacks);
  o.tenant?.register(app);
  if (l.tls === undefined) return { app, reloadTls: () => false };
  recordCertificateExpiry(o.metrics, "api", tls!.cert);
  const reloader = new TlsReloader(l.tls, app.server as unknown as TlsServer, o.clock, o.logger, (cert) =>
    recordCertificateExpiry(o.metrics, "api", cert),
  );
  reloader.watch();
  app.addHook("onClose", async () => reloader.close());
  return { app, reloadTls: () => reloader.reload() };
}
