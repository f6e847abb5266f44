import { readFile } from "node:fs/promises";
import { hmacSecret, signRequest } from "../../auth/hmac.ts";
import { withDeadline } from "../../core/async/index.ts";
import { QUERY, SIGNATURE_HEADER, STORAGE_HEADER } from "../../core/backend-contract/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { parseStrictJson } from "../../core/encoding.ts";
import { parseBackendError } from "../../core/envelope.ts";
import { FredError } from "../../core/errors.ts";
import { isUuidV4 } from "../../core/uuid.ts";
import { Pool } from "../../http-pool.ts";
import type { BackendConfig } from "../config/index.ts";

// The HTTP exchange with one backend: the signed transport, then what its answer to a
// mutation means (`classifyMutation`).

/**
 * One backend's HTTP transport: a keep-alive undici pool, the per-backend timeout, TLS
 * options, the HMAC signature on every request, and the storage-identity rules on every
 * response (exactly one X-Fred-Backend-Storage-ID, equal to the pin once pinned). Body
 * reads stop at a per-route size cap.
 */
export interface RawResponse {
  status: number;
  body: Buffer;
  /** The storage ID the response carried (validated). */
  storageId: string;
}

export interface SendInput {
  method: "GET" | "POST";
  path: string;
  query?: Record<string, string | readonly string[]>;
  body?: unknown;
  maxBytes: number;
  signal?: AbortSignal;
}

/** A streaming answer: the body of a 200 as it arrives; any other status's body read whole (capped). */
export type StreamResponse =
  | { status: 200; storageId: string; stream: AsyncIterable<Buffer> & { destroy(): void } }
  | { status: number; storageId: string; body: Buffer };

export interface StreamInput {
  path: string;
  query: Record<string, string>;
  /** The longest silence allowed between two chunks of the body. */
  idleMs: number;
  /** Cap of an error answer's body. */
  maxErrorBytes: number;
  signal: AbortSignal;
}

export interface TransportOptions {
  backend: BackendConfig;
  /** Signing key: the backend's hmac_secret, or the legacy callback_secret. */
  secret: string;
  /** Pinned storage ID; undefined only for inventory reads before init pins it. */
  storageId: string | undefined;
  clock?: Clock;
  connections?: number;
  /** Connections for held-open streams (log follows), apart from the request pool (default 64). */
  streamConnections?: number;
}

/** Encodes query parameters with sorted keys, as the reference's Go client does. */
export function encodeQuery(query: Record<string, string | readonly string[]>): string {
  const params = new URLSearchParams();
  for (const key of Object.keys(query).sort()) {
    const value = query[key]!;
    for (const v of typeof value === "string" ? [value] : value) params.append(key, v);
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/**
 * The origin requests are made for: the backend's own, or for a socket a placeholder the
 * Host header carries (the contract signs method, path and body, never the host).
 */
function httpOrigin(b: BackendConfig): string {
  return b.socketPath === "" ? b.url : "http://localhost";
}

/**
 * Connections per backend for requests. A burst admits 256 provisions at once
 * (PROVISION_ADMISSION); with 16 connections most of them waited in the pool's queue and
 * each backend saw a dozen requests per fsync of its journal. At 64 a backend's commits
 * and fsyncs are shared by several times as many provisions, and so are providerd's for
 * the callbacks that follow: a 10,000-lease burst made about a third fewer write calls on
 * every process and used about a seventh less CPU (docs/benchmarks-history.md).
 */
const REQUEST_CONNECTIONS = 64;

type TlsConnect = { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized: boolean };

export class BackendTransport {
  readonly name: string;
  readonly storageId: string | undefined;
  readonly #pool: Pool;
  readonly #secret: Buffer;
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  /** Held-open streams get their own connections, so they never starve the pool's requests. */
  readonly #streams: Pool;
  /** The HTTP base URL, socket path ("" for TCP) and TLS options, for connections outside the pools (shell WebSockets). */
  readonly url: string;
  readonly socketPath: string;
  readonly tls: TlsConnect | undefined;

  private constructor(opts: TransportOptions, pool: Pool, streams: Pool, tls: TlsConnect | undefined) {
    this.name = opts.backend.name;
    this.storageId = opts.storageId;
    this.#pool = pool;
    this.#streams = streams;
    this.#secret = hmacSecret(opts.secret);
    this.#clock = opts.clock ?? systemClock;
    this.#timeoutMs = opts.backend.timeoutMs;
    this.url = httpOrigin(opts.backend);
    this.socketPath = opts.backend.socketPath;
    this.tls = tls;
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** The request target (storage ID added) and its signature header, as `send` makes them. */
  sign(method: "GET" | "POST", path: string, query: Record<string, string | readonly string[]> = {}) {
    const all = { ...query };
    if (this.storageId !== undefined) all[QUERY.storageId] = this.storageId;
    const uri = `${path}${encodeQuery(all)}`;
    const timestamp = Math.floor(this.#clock.now() / 1000);
    return { uri, headers: { [SIGNATURE_HEADER]: signRequest(this.#secret, { method, uri, timestamp }) } };
  }

  /** Throws ERR_BACKEND_IDENTITY unless `value` is exactly one storage ID, the pinned one once pinned. */
  checkStorageHeader(value: string | string[] | undefined): string {
    return this.#checkStorageHeader(value);
  }

  static async create(opts: TransportOptions): Promise<BackendTransport> {
    const b = opts.backend;
    if (opts.storageId !== undefined && !isUuidV4(opts.storageId)) {
      throw new FredError(
        "ERR_BACKEND_STORAGE_ID",
        `backend ${b.name}: pinned storage ID is not a canonical UUIDv4`,
      );
    }
    const connect =
      b.scheme === "https"
        ? {
            ca: b.tlsCaFile ? await readFile(b.tlsCaFile) : undefined,
            cert: b.tlsClientCertFile ? await readFile(b.tlsClientCertFile) : undefined,
            key: b.tlsClientKeyFile ? await readFile(b.tlsClientKeyFile) : undefined,
            rejectUnauthorized: !b.tlsSkipVerify,
          }
        : undefined;
    const origin = httpOrigin(b);
    const socket = b.socketPath === "" ? {} : { socketPath: b.socketPath };
    const pool = new Pool(origin, {
      connections: opts.connections ?? REQUEST_CONNECTIONS,
      headersTimeout: b.timeoutMs,
      bodyTimeout: b.timeoutMs,
      ...socket,
      ...(connect === undefined ? {} : { connect }),
    });
    const streams = new Pool(origin, {
      connections: opts.streamConnections ?? 64,
      headersTimeout: b.timeoutMs,
      ...socket,
      ...(connect === undefined ? {} : { connect }),
    });
    return new BackendTransport(opts, pool, streams, connect);
  }

  async close(): Promise<void> {
    // Open streams are cut (destroy), not waited for: they end only when their lease does.
    await Promise.all([this.#pool.close(), this.#streams.destroy()]);
  }

  /**
   * A signed GET whose 200 body is read as it arrives (never buffered whole): the headers
   * must come within the backend's timeout, then each chunk within `idleMs` of the last.
   * The caller's `signal` (the tenant left) ends the stream.
   */
  async stream(input: StreamInput): Promise<StreamResponse> {
    const query: Record<string, string> = { ...input.query };
    if (this.storageId !== undefined) query[QUERY.storageId] = this.storageId;
    const uri = `${input.path}${encodeQuery(query)}`;
    const timestamp = Math.floor(this.#clock.now() / 1000);
    const headers = {
      [SIGNATURE_HEADER]: signRequest(this.#secret, { method: "GET", uri, body: undefined, timestamp }),
    };
    try {
      const res = await this.#streams.request({
        path: uri,
        method: "GET",
        headers,
        signal: input.signal,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: input.idleMs,
      });
      let storageId: string;
      try {
        storageId = this.#checkStorageHeader(res.headers[STORAGE_HEADER]);
      } catch (err) {
        res.body.destroy();
        throw err;
      }
      if (res.statusCode === 200) return { status: 200, storageId, stream: res.body };
      return {
        status: res.statusCode,
        storageId,
        body: await readCapped(res.body, input.maxErrorBytes, this.name),
      };
    } catch (err) {
      if (err instanceof FredError) throw err;
      if (input.signal.aborted) throw input.signal.reason;
      const code = (err as { code?: string }).code;
      if (code === "UND_ERR_HEADERS_TIMEOUT")
        throw new FredError(
          "ERR_BACKEND_TIMEOUT",
          `backend ${this.name} did not answer within ${this.#timeoutMs} ms`,
          {
            retryable: true,
          },
        );
      throw new FredError("ERR_BACKEND_TRANSPORT", `backend ${this.name}: ${(err as Error).message}`, {
        retryable: true,
        cause: err,
      });
    }
  }

  async send(input: SendInput): Promise<RawResponse> {
    const query = { ...(input.query ?? {}) };
    if (this.storageId !== undefined) query[QUERY.storageId] = this.storageId;
    const uri = `${input.path}${encodeQuery(query)}`;
    const body = input.body === undefined ? undefined : Buffer.from(JSON.stringify(input.body));
    const timestamp = Math.floor(this.#clock.now() / 1000);
    const headers: Record<string, string> = {
      [SIGNATURE_HEADER]: signRequest(this.#secret, { method: input.method, uri, body, timestamp }),
    };
    if (body !== undefined) headers["content-type"] = "application/json";

    const timedOut = () =>
      new FredError(
        "ERR_BACKEND_TIMEOUT",
        `backend ${this.name} did not answer within ${this.#timeoutMs} ms`,
        {
          retryable: true,
        },
      );
    try {
      return await withDeadline(this.#clock, this.#timeoutMs, input.signal, timedOut, async (signal) => {
        const res = await this.#pool.request({ path: uri, method: input.method, headers, body, signal });
        const received = await readCapped(res.body, input.maxBytes, this.name);
        const storageId = this.#checkStorageHeader(res.headers[STORAGE_HEADER]);
        return { status: res.statusCode, body: received, storageId };
      });
    } catch (err) {
      // Ours (the deadline, a size cap, the storage header) as thrown; the caller's abort as its reason.
      if (err instanceof FredError) throw err;
      if (input.signal?.aborted) throw input.signal.reason;
      throw new FredError("ERR_BACKEND_TRANSPORT", `backend ${this.name}: ${(err as Error).message}`, {
        retryable: true,
        cause: err,
      });
    }
  }

  #checkStorageHeader(value: string | string[] | undefined): string {
    if (value === undefined) {
      throw new FredError(
        "ERR_BACKEND_IDENTITY",
        `backend ${this.name} response has no X-Fred-Backend-Storage-ID`,
      );
    }
    if (Array.isArray(value) || value.includes(",")) {
      throw new FredError(
        "ERR_BACKEND_IDENTITY",
        `backend ${this.name} response repeats X-Fred-Backend-Storage-ID`,
      );
    }
    if (!isUuidV4(value)) {
      throw new FredError(
        "ERR_BACKEND_IDENTITY",
        `backend ${this.name} storage ID ${JSON.stringify(value)} is not a UUIDv4`,
      );
    }
    if (this.storageId !== undefined && value !== this.storageId) {
      throw new FredError(
        "ERR_BACKEND_IDENTITY",
        `backend ${this.name} answered as storage ${value}, but ${this.storageId} is pinned`,
      );
    }
    return value;
  }
}

async function readCapped(stream: AsyncIterable<Buffer>, maxBytes: number, name: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.length;
    if (total > maxBytes) {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      throw new FredError("ERR_BACKEND_TOO_LARGE", `backend ${name} response exceeds ${maxBytes} bytes`, {
        retryable: true,
      });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * What a backend's answer to a mutating request proves (README seed, restore section):
 *
 * - `accepted`: the expected 2xx — the backend owns the operation now.
 * - `refused`: a contract-conforming synchronous domain refusal — the backend did not
 *   and will not act on this request, so a write-ahead attempt may be cleared.
 * - `ambiguous`: anything else (timeout, transport error, generic 5xx, malformed or
 *   off-contract body, coded already_provisioned, unknown refusal code, identity
 *   mismatch, unvalidated 503) — the backend may have accepted, so the attempt stays.
 * - `not-sent`: nothing reached the backend (open circuit, fenced, unpinned, or the
 *   connection was refused: no byte of the request was delivered).
 */
export type MutationOutcome =
  | { kind: "accepted"; status: number; body: unknown }
  | {
      kind: "refused";
      status: number;
      /** Tenant-safe text from the backend envelope ("" when the body was empty). */
      error: string;
      code?: string;
      validationCode?: string;
    }
  | { kind: "ambiguous"; reason: AmbiguousReason; status?: number; detail: string }
  | {
      kind: "not-sent";
      reason: "circuit-open" | "fenced" | "not-pinned" | "connect-refused";
      detail: string;
    };

export type AmbiguousReason =
  | "timeout"
  | "transport"
  | "server-error"
  | "malformed"
  | "already-provisioned"
  | "unknown-code"
  | "identity"
  | "too-large"
  | "unexpected-status";

/** Contract refusals whose `code` may be absent or one of these; any other code is not understood. */
const REFUSAL_CODES: Record<number, ReadonlySet<string | undefined>> = {
  400: new Set([undefined]),
  409: new Set([undefined]),
  422: new Set([undefined, "demote_exceeds_tier"]),
  503: new Set(["insufficient_resources"]),
};
const VALIDATION_CODES = new Set([undefined, "unknown_sku", "invalid_manifest", "image_not_allowed"]);
const ENVELOPE_LIMIT = 64 * 1024;

/** Refusal codes one operation adds to the common table (by status). */
export type ExtraRefusals = Readonly<Record<number, readonly (string | undefined)[]>>;

export function classifyMutation(
  status: number,
  expected: number,
  body: Buffer,
  extra: ExtraRefusals = {},
): MutationOutcome {
  if (status === expected) {
    let parsed: unknown;
    if (body.length > 0) {
      try {
        parsed = parseStrictJson(body, ENVELOPE_LIMIT * 16);
      } catch {
        parsed = undefined;
      }
    }
    return { kind: "accepted", status, body: parsed };
  }
  if (status >= 200 && status < 300) {
    return {
      kind: "ambiguous",
      reason: "unexpected-status",
      status,
      detail: `expected ${expected}, got ${status}`,
    };
  }
  const more = extra[status];
  const common = REFUSAL_CODES[status];
  const allowed = more === undefined ? common : new Set([...(common ?? []), ...more]);
  if (body.length === 0) {
    // An empty body is tolerated only for 409 and 422.
    if (status === 409 || status === 422 || more !== undefined) return { kind: "refused", status, error: "" };
    return ambiguousFor(status, "empty error body");
  }
  let envelope: ReturnType<typeof parseBackendError>;
  try {
    envelope = parseBackendError(parseStrictJson(body, ENVELOPE_LIMIT));
  } catch {
    envelope = undefined;
  }
  if (envelope === undefined) {
    return {
      kind: "ambiguous",
      reason: "malformed",
      status,
      detail: "error body is not a backend error envelope",
    };
  }
  if (allowed === undefined) return ambiguousFor(status, envelope.error);
  if (status === 409 && envelope.code === "already_provisioned") {
    return { kind: "ambiguous", reason: "already-provisioned", status, detail: envelope.error };
  }
  if (!allowed.has(envelope.code) || !VALIDATION_CODES.has(envelope.validation_code)) {
    return {
      kind: "ambiguous",
      reason: "unknown-code",
      status,
      detail: `${envelope.code ?? envelope.validation_code ?? ""}: ${envelope.error}`,
    };
  }
  const out: MutationOutcome = { kind: "refused", status, error: envelope.error };
  if (envelope.code !== undefined) out.code = envelope.code;
  if (envelope.validation_code !== undefined) out.validationCode = envelope.validation_code;
  return out;
}

function ambiguousFor(status: number, detail: string): MutationOutcome {
  return {
    kind: "ambiguous",
    reason: status >= 500 ? "server-error" : "unexpected-status",
    status,
    detail,
  };
}

/**
 * Whether a response counts toward the circuit breaker. Domain answers (400, 404,
 * 409, 422, capacity 503) mean the backend is healthy and deciding; everything else
 * that is not 2xx suggests it is not.
 */
/** A 501 whose envelope says `unsupported`: the backend does not implement the request. */
export function isUnsupported(body: Buffer): boolean {
  try {
    return parseBackendError(parseStrictJson(body, ENVELOPE_LIMIT))?.code === "unsupported";
  } catch {
    return false;
  }
}

export function countsAsFailure(status: number, body: Buffer): boolean {
  if (status < 400) return false;
  if (status === 400 || status === 404 || status === 409 || status === 422) return false;
  // A backend that does not implement an operation is healthy and saying so.
  if (status === 501) return !isUnsupported(body);
  if (status === 503) {
    try {
      return parseBackendError(parseStrictJson(body, ENVELOPE_LIMIT))?.code !== "insufficient_resources";
    } catch {
      return true;
    }
  }
  return true;
}
