import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { Counter, Histogram, type Registry } from "prom-client";

/**
 * The tenant API's request families: every answer on a tenant route (`/v1/…`, the OpenAPI
 * document, and requests no route matched) counted by method, route template and status,
 * timed by method and route; every 429 on the listener counted by the limiter that refused.
 * The route label is the template (`/v1/leases/:lease_uuid/status`), never the URL, so the
 * label set stays bounded whatever tenants send. A WebSocket upgrade is counted once, when
 * it is answered (101, or the refusal).
 */

/** Which bucket refused a 429, noted where the refusal is written (`noteRateLimited`). */
export type Limiter = "ip" | "tenant" | "maintenance" | "shell" | "callback" | "other";

const refusedBy = new WeakMap<IncomingMessage, Limiter>();

/** Marks the request's 429 as `limiter`'s (the answer hook reads it). */
export function noteRateLimited(raw: IncomingMessage, limiter: Limiter): void {
  refusedBy.set(raw, limiter);
}

const UNMATCHED = "unmatched";

function isTenantRoute(route: string): boolean {
  return route === UNMATCHED || route.startsWith("/v1/") || route === "/openapi.json";
}

function routeOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? UNMATCHED;
}

/** Upgrade requests waiting for their answer: the count to make once the upgrade is accepted. */
const pendingUpgrades = new WeakMap<IncomingMessage, () => void>();

/**
 * The WebSocket server accepted `raw`'s upgrade (its 101 is written): counted here, since
 * a hijacked reply never reaches onResponse. A refused upgrade is an ordinary answer.
 */
export function upgradeAccepted(raw: IncomingMessage): void {
  pendingUpgrades.get(raw)?.();
  pendingUpgrades.delete(raw);
}

/** Counts every answer through hooks on `app` (one registry per process: call once). */
export function installApiMetrics(app: FastifyInstance, registry: Registry): void {
  const registers = [registry];
  const requests = new Counter({
    name: "fred_api_requests_total",
    help: "Tenant API answers, by method, route template and status code",
    labelNames: ["method", "route", "status"],
    registers,
  });
  const duration = new Histogram({
    name: "fred_api_request_duration_seconds",
    help: "Tenant API answer time, by method and route template",
    labelNames: ["method", "route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const limited = new Counter({
    name: "fred_api_rate_limited_total",
    help: "Requests refused 429, by the limiter that refused",
    labelNames: ["limiter"],
    registers,
  });
  // One pair of label-bound children per (method, route, status), kept: the set is bounded
  // by the routes, and a bound child skips prom-client's per-call label hashing.
  const series = new Map<string, { count: () => void; time: (seconds: number) => void }>();
  const count = (req: FastifyRequest, status: number, seconds: number) => {
    if (status === 429) limited.inc({ limiter: refusedBy.get(req.raw) ?? "other" });
    const route = routeOf(req);
    if (!isTenantRoute(route)) return;
    const key = `${req.method} ${status} ${route}`;
    let s = series.get(key);
    if (s === undefined) {
      const counter = requests.labels({ method: req.method, route, status: String(status) });
      const histogram = duration.labels({ method: req.method, route });
      s = { count: () => counter.inc(), time: (v) => histogram.observe(v) };
      series.set(key, s);
    }
    s.count();
    s.time(seconds);
  };
  app.addHook("onRequest", (req, _reply, done) => {
    if (req.headers.upgrade !== undefined) {
      const start = performance.now();
      pendingUpgrades.set(req.raw, () => count(req, 101, (performance.now() - start) / 1000));
    }
    done();
  });
  app.addHook("onResponse", (req, reply, done) => {
    pendingUpgrades.delete(req.raw);
    count(req, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
