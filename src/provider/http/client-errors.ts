import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { tenantError } from "../../core/envelope.ts";
import { SECURITY_HEADERS } from "./edge.ts";

/**
 * Answers the listener gives before a request reaches Fastify's routing, in the same
 * envelope and with the same security headers as every other answer. Without this,
 * Node's parser errors (a broken request line, header syntax, a head over 16 KiB, a read
 * timeout) and the router's (a path that is not valid URL encoding, a path segment over
 * the router's length cap) leave with Fastify's default body
 * (`{"error","message","statusCode"}`), and an `Expect` other than 100-continue with
 * Node's bare 417. None of these reach a route, so the edge's hooks never saw them.
 */
const RAW_SECURITY_HEADERS = Object.entries(SECURITY_HEADERS)
  .map(([k, v]) => `${k}: ${v}\r\n`)
  .join("");

const REASONS: Record<number, string> = {
  400: "bad request",
  408: "request timeout",
  431: "request header fields too large",
};

function statusOf(err: NodeJS.ErrnoException): number {
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") return 408;
  if (err.code === "HPE_HEADER_OVERFLOW") return 431;
  return 400;
}

/** Fastify's `clientErrorHandler`: one envelope, written raw, then the socket is closed. */
export function clientErrorAnswer(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) {
    const status = statusOf(err);
    const body = JSON.stringify(tenantError(status, REASONS[status] ?? "bad request"));
    socket.write(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Node's `connect` event: a CONNECT request never reaches the router, and without a
 * listener Node drops the socket with no answer. This is not a proxy: 405 in the envelope.
 */
export function connectRefused(_req: IncomingMessage, socket: Duplex): void {
  const body = JSON.stringify(tenantError(405, "method not allowed"));
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nAllow: GET, POST, OPTIONS\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${body}`,
    );
  } else {
    socket.destroy();
  }
}

/** Node's `checkExpectation` event: an expectation we cannot meet is a 417 envelope. */
export function expectationFailed(_req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(tenantError(417, "expectation not supported"));
  res.writeHead(417, {
    ...SECURITY_HEADERS,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close",
  });
  res.end(body);
}

/** Fastify's `frameworkErrors`: the router refused the path before any route or hook ran. */
export function frameworkErrorAnswer(
  err: { code?: string },
  _req: FastifyRequest,
  reply: FastifyReply,
): void {
  const status = err.code === "FST_ERR_MAX_PARAM_LENGTH" ? 414 : 400;
  void reply
    .code(status)
    .headers(SECURITY_HEADERS)
    .send(tenantError(status, status === 414 ? "request path too long" : "bad request"));
}
