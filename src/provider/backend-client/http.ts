import { readFile } from "node:fs/promises";
import { Pool } from "undici";
import { hmacSecret, signRequest } from "../../auth/hmac.ts";
import { withDeadline } from "../../core/async/index.ts";
import { QUERY, SIGNATURE_HEADER, STORAGE_HEADER } from "../../core/backend-contract/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { isUuidV4 } from "../../core/uuid.ts";
import type { BackendConfig } from "../config/index.ts";

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

export interface TransportOptions {
  backend: BackendConfig;
  /** Signing key: the backend's hmac_secret, or the legacy callback_secret. */
  secret: string;
  /** Pinned storage ID; undefined only for inventory reads before init pins it. */
  storageId: string | undefined;
  clock?: Clock;
  connections?: number;
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

export class BackendTransport {
  readonly name: string;
  readonly storageId: string | undefined;
  readonly #pool: Pool;
  readonly #secret: Buffer;
  readonly #clock: Clock;
  readonly #timeoutMs: number;

  private constructor(opts: TransportOptions, pool: Pool) {
    this.name = opts.backend.name;
    this.storageId = opts.storageId;
    this.#pool = pool;
    this.#secret = hmacSecret(opts.secret);
    this.#clock = opts.clock ?? systemClock;
    this.#timeoutMs = opts.backend.timeoutMs;
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
    const pool = new Pool(b.url, {
      connections: opts.connections ?? 16,
      headersTimeout: b.timeoutMs,
      bodyTimeout: b.timeoutMs,
      ...(connect === undefined ? {} : { connect }),
    });
    return new BackendTransport(opts, pool);
  }

  async close(): Promise<void> {
    await this.#pool.close();
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
