// providerd's HTTP edge: the hooks every answer goes through, and the client address
// the per-IP rate limit keys on (`ClientIp`).
import { BlockList, isIP } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type BucketVerdict, RateBuckets } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { tenantError } from "../../core/envelope.ts";
import { noteRateLimited } from "./api-metrics.ts";

/**
 * What every answer of providerd's listener goes through, in this order:
 * 1. security headers (no sniffing, no framing, no caching: answers are per tenant and
 *    change with state);
 * 2. CORS for browser clients (`cors_origins`: `["*"]` any origin, a list those origins,
 *    `[]` none), preflights answered here;
 * 3. the per-IP rate limit (`rate_limit_rps`/`_burst`) on every route — operational ones
 *    included — except the callback route, which has budgets of its own so tenant traffic
 *    can never spend a backend's; a refusal is 429 with `Retry-After`, and every answer
 *    carries the IETF `RateLimit-*` headers of the bucket that applies;
 * 4. the write deadline (`http_write_timeout`): a response not delivered in time (a
 *    client that does not read) loses its connection.
 */
export interface EdgeOptions {
  clock: Clock;
  clientIp: ClientIp;
  rateLimit: { rps: number; burst: number };
  corsOrigins: readonly string[];
  writeTimeoutMs: number;
  /** Paths with their own budgets (the callback route): the per-IP limit skips them. */
  exemptPaths: ReadonlySet<string>;
}

/** On every answer, including those written before routing (see client-errors.ts). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "x-xss-protection": "1; mode=block",
  "cache-control": "no-store",
};

const CORS_METHODS = "GET, POST";
const CORS_HEADERS = "Authorization, Content-Type, Idempotency-Key";

/**
 * Writes the RateLimit-* headers of `v` (and Retry-After on a refusal). A second bucket
 * (the tenant's, after the client IP's) replaces them only when it is the tighter one.
 */
export function rateLimitHeaders(reply: FastifyReply, v: BucketVerdict, windowSeconds: number): void {
  const current = reply.getHeader("ratelimit-remaining");
  if (v.allowed && current !== undefined && Number(current) <= v.remaining) return;
  reply.header("ratelimit-limit", String(v.limit));
  reply.header("ratelimit-remaining", String(v.remaining));
  reply.header("ratelimit-reset", String(v.resetSeconds));
  reply.header("ratelimit-policy", `${v.limit};w=${windowSeconds}`);
  if (!v.allowed) reply.header("retry-after", String(v.retryAfterSeconds));
}

export function rateLimited(reply: FastifyReply): FastifyReply {
  return reply.code(429).send(tenantError(429, "rate limit exceeded"));
}

export function installEdge(app: FastifyInstance, o: EdgeOptions): void {
  const perIp = new RateBuckets(o.rateLimit.rps, o.rateLimit.burst, o.clock, { idleMs: 3 * 60_000 });
  const window = Math.max(1, Math.ceil(o.rateLimit.burst / o.rateLimit.rps));
  const anyOrigin = o.corsOrigins.includes("*");
  const origins = new Set(o.corsOrigins);

  // Callback-style hooks: an async hook costs a promise and a microtask turn per request.
  // Answering early means sending without calling `done`.
  app.addHook("onRequest", (req, reply, done) => {
    reply.headers(SECURITY_HEADERS);

    const origin = req.headers.origin;
    const corsAllowed = origin !== undefined && (anyOrigin || origins.has(origin));
    if (corsAllowed) {
      reply.header("access-control-allow-origin", anyOrigin ? "*" : origin);
      if (!anyOrigin) reply.header("vary", "Origin");
    }
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      if (!corsAllowed) {
        reply.code(403).send(tenantError(403, "origin not allowed"));
        return;
      }
      reply.header("access-control-allow-methods", CORS_METHODS);
      reply.header("access-control-allow-headers", CORS_HEADERS);
      reply.header("access-control-max-age", "600");
      reply.code(204).send();
      return;
    }

    const query = req.url.indexOf("?");
    if (o.exemptPaths.has(query < 0 ? req.url : req.url.slice(0, query))) return done();
    const verdict = perIp.consume(o.clientIp.of(req));
    rateLimitHeaders(reply, verdict, window);
    if (!verdict.allowed) {
      noteRateLimited(req.raw, "ip");
      rateLimited(reply);
      return;
    }
    done();
  });

  app.addHook("onSend", (_req, reply, payload, done) => {
    const res = reply.raw;
    const cancel = o.clock.setTimer(o.writeTimeoutMs, () => res.destroy());
    res.once("close", cancel);
    done(null, payload);
  });
}

/**
 * The client address rate limits key on. A request from an address inside
 * `trusted_proxies` speaks for its client through `X-Forwarded-For`: the client is the
 * rightmost hop that is not itself a trusted proxy (hops left of it could be forged by the
 * client). From anywhere else the header is ignored and the socket's address is used.
 */
export class ClientIp {
  readonly #trusted: BlockList | undefined;

  constructor(trustedProxies: readonly string[]) {
    if (trustedProxies.length === 0) return;
    this.#trusted = new BlockList();
    for (const cidr of trustedProxies) {
      const [net = "", bits = ""] = cidr.split("/");
      const family = isIP(net) === 6 ? "ipv6" : "ipv4";
      this.#trusted.addSubnet(net, Number(bits), family);
    }
  }

  #isTrusted(ip: string): boolean {
    // Without trusted proxies (the default) no address is parsed at all: this runs per request.
    if (this.#trusted === undefined) return false;
    const family = isIP(ip);
    if (family === 0) return false;
    return this.#trusted.check(ip, family === 6 ? "ipv6" : "ipv4");
  }

  of(req: FastifyRequest): string {
    const peer = normalize(req.socket.remoteAddress ?? "");
    if (!this.#isTrusted(peer)) return peer;
    const header = req.headers["x-forwarded-for"];
    const hops = (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((h) => normalize(h.trim()))
      .filter((h) => h !== "");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return peer;
      if (!this.#isTrusted(hop)) return hop;
    }
    return hops[0] ?? peer;
  }
}

/** `::ffff:10.0.0.1` → `10.0.0.1`, so one client has one key whichever way it arrived. */
function normalize(ip: string): string {
  return ip.startsWith("::ffff:") && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}
