import Fastify, { type FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { TenantApi } from "../api/index.ts";
import { type CallbackIngressOptions, registerCallbackIngress } from "../callbacks/ingress.ts";
import { type HealthSources, healthReport, isReady } from "./health.ts";
import { registerWorkloadsRoute, type WorkloadsSources } from "./workloads.ts";

/**
 * providerd's HTTP listener: operational endpoints, the backend callback route and the
 * tenant API (`/v1/leases/…`).
 * Errors leave as `{"error": "...", "code": <status>}`; internal detail is logged, not sent.
 */
export interface HttpServerOptions {
  health: HealthSources;
  workloads: WorkloadsSources;
  callbacks: CallbackIngressOptions;
  /** The tenant API; absent in tests of the operational routes alone. */
  tenant?: TenantApi;
  metrics: Registry;
  maxRequestBodySize: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
}

export function buildHttpServer(o: HttpServerOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: o.maxRequestBodySize,
    requestTimeout: o.requestTimeoutMs,
    keepAliveTimeout: o.idleTimeoutMs,
    return503OnClosing: true,
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: "not found", code: 404 }));
  app.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
    const status =
      err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    const message =
      status === 413 ? "request body too large" : status === 500 ? "internal error" : "bad request";
    if (status === 500) o.callbacks.logger.error({ err }, "request failed");
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
  return app;
}
