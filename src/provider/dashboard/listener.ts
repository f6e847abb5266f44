import type { Server as TlsServer } from "node:tls";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Registry } from "prom-client";
import type { Clock } from "../../core/clock.ts";
import { tenantError } from "../../core/envelope.ts";
import type { Logger } from "../../log.ts";
import { ApiError } from "../api/index.ts";
import { clientErrorAnswer, frameworkErrorAnswer } from "../http/client-errors.ts";
import { readTls, type TlsFiles } from "../http/listener.ts";
import { NO_JSON_SCHEMAS } from "../http/no-json-schemas.ts";
import { recordCertificateExpiry } from "../http/tls-expiry.ts";
import { TLS_MIN_VERSION, TlsReloader } from "../http/tls-reload.ts";
import type { OperatorAuth } from "./auth.ts";
import type { DashboardContext } from "./context.ts";
import { registerApiRoutes } from "./routes/index.ts";
import { staticFile, type WebRoot } from "./static-files.ts";

/**
 * The operator listener: its own Fastify instance on operator_listen_addr, never the
 * tenant port. `/` and `/assets/*` (the page, no data) are served to anyone; `/api/*`
 * (read only, GET) needs the operator token or a verified client certificate. Every
 * answer carries the page's security headers; `/api/` answers are never cached.
 */
export const OPERATOR_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** The headers for pages from `web`: from source, script-src also admits the import map by its hash. */
export function operatorSecurityHeaders(web: WebRoot): Readonly<Record<string, string>> {
  if (web.importMapHash === undefined) return OPERATOR_SECURITY_HEADERS;
  const csp = OPERATOR_SECURITY_HEADERS["content-security-policy"] as string;
  return {
    ...OPERATOR_SECURITY_HEADERS,
    "content-security-policy": csp.replace("script-src 'self'", `script-src 'self' ${web.importMapHash}`),
  };
}

const READ_METHODS = new Set(["GET", "HEAD"]);

export interface OperatorServerOptions {
  context: DashboardContext;
  auth: OperatorAuth;
  web: WebRoot;
  /** HTTPS (with `caFile`: client certificates required and verified). */
  tls: TlsFiles | undefined;
  readTimeoutMs: number;
  writeTimeoutMs: number;
  idleTimeoutMs: number;
  /** Where the served certificate's expiry is exported (listener="operator"). */
  metrics: Registry;
  clock: Clock;
  logger: Logger;
}

export interface OperatorServer {
  app: FastifyInstance;
  reloadTls(): boolean;
}

/** Whether a path names the API, however it is spelt (escapes, `.` and empty segments, case). */
function isApiPath(path: string): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return true;
  }
  const segments = decoded.split("/").filter((seg) => seg !== "" && seg !== ".");
  return segments[0]?.toLowerCase() === "api";
}

export function buildOperatorServer(o: OperatorServerOptions): OperatorServer {
  const tls = o.tls === undefined ? undefined : readTls(o.tls);
  const mtls = tls?.ca !== undefined;
  const app = Fastify({
    logger: false,
    // Read only: no route takes a body.
    bodyLimit: 1024,
    requestTimeout: o.readTimeoutMs,
    keepAliveTimeout: o.idleTimeoutMs,
    return503OnClosing: true,
    clientErrorHandler: clientErrorAnswer,
    frameworkErrors: frameworkErrorAnswer,
    schemaController: NO_JSON_SCHEMAS,
    ...(tls === undefined
      ? {}
      : {
          https: {
            ...tls,
            minVersion: TLS_MIN_VERSION,
            ...(mtls ? { requestCert: true, rejectUnauthorized: true } : {}),
          },
        }),
  }) as unknown as FastifyInstance;

  // Methods and headers for every answer, whatever path it names. No answer is cached:
  // /api/ answers change with state, and the page is small.
  const securityHeaders = operatorSecurityHeaders(o.web);
  app.addHook("onRequest", (req, reply, done) => {
    reply.headers(securityHeaders);
    reply.header("cache-control", "no-store");
    if (!READ_METHODS.has(req.method)) {
      reply.header("allow", "GET, HEAD").code(405).send(tenantError(405, "method not allowed"));
      return;
    }
    done();
  });
  // The token is checked by the routes' own hook (an encapsulated plugin), not by looking at
  // the URL: the router also matches `/%61pi/…` or `/./api/…`, which a prefix test would miss.
  const authorize = (req: FastifyRequest, reply: FastifyReply): boolean => {
    const verdict = o.auth.check(req);
    if (verdict.ok) return true;
    if (verdict.status === 429) {
      reply
        .header("retry-after", String(verdict.retryAfterSeconds))
        .code(429)
        .send(tenantError(429, "too many failed authentication attempts"));
      return false;
    }
    reply.header("www-authenticate", "Bearer").code(401).send(tenantError(401, "unauthorized"));
    return false;
  };
  // A response not delivered in time (a client that does not read) loses its connection.
  app.addHook("onSend", (_req, reply, payload, done) => {
    const res = reply.raw;
    const cancel = o.clock.setTimer(o.writeTimeoutMs, () => res.destroy());
    res.once("close", cancel);
    done(null, payload);
  });

  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split("?", 1)[0] as string;
    // An /api/ path no route has is answered 404 to the token's holder only.
    if (isApiPath(path)) {
      if (!authorize(req, reply)) return reply;
    } else {
      const file = await staticFile(o.web, path);
      if (file !== undefined) return reply.code(200).header("content-type", file.type).send(file.body);
    }
    return reply.code(404).send(tenantError(404, "not found"));
  });
  app.setErrorHandler((err: unknown, _req, reply: FastifyReply) => {
    if (err instanceof ApiError) {
      if (err.retryAfterSeconds !== undefined) reply.header("retry-after", String(err.retryAfterSeconds));
      return reply.code(err.status).send(tenantError(err.status, err.publicMessage, err.reason));
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500)
      return reply.code(status).send(tenantError(status, "bad request"));
    o.logger.error({ err }, "operator request failed");
    return reply.code(500).send(tenantError(500, "internal error"));
  });

  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  app.register(async (api) => {
    api.addHook("onRequest", (req, reply, done) => {
      if (authorize(req, reply)) done();
    });
    registerApiRoutes(api, o.context);
  });

  if (o.tls === undefined || tls === undefined) return { app, reloadTls: () => false };
  recordCertificateExpiry(o.metrics, "operator", tls.cert);
  const reloader = new TlsReloader(o.tls, app.server as unknown as TlsServer, o.clock, o.logger, (cert) =>
    recordCertificateExpiry(o.metrics, "operator", cert),
  );
  reloader.watch();
  app.addHook("onClose", async () => reloader.close());
  return { app, reloadTls: () => reloader.reload() };
}
