/**
 * The node connection: CometBFT JSON-RPC POSTs on one keep-alive undici pool (ABCI queries,
 * status, broadcasts, the tx index and block results, decoded by comet-json.ts), each bounded
 * by `requestTimeoutMs` on the injected clock (and a query by the caller's signal). Errors become
 * FredErrors: a gRPC NotFound is `ERR_CHAIN_NOT_FOUND` (callers turn it into `undefined`),
 * other query failures `ERR_CHAIN_QUERY`, a request past its deadline retryable
 * `ERR_CHAIN_RPC_TIMEOUT`, and other transport failures retryable `ERR_CHAIN_UNAVAILABLE`.
 */
import { withDeadline } from "../../core/async/index.ts";
import { type Clock, systemClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { Pool } from "../../http-pool.ts";
import {
  type CheckTxResult,
  decodeBlockEvents,
  decodeBroadcastTxSync,
  decodeFirstTx,
  decodeStatus,
  type IncludedTx,
  type NodeStatus,
} from "./comet-json.ts";

export interface NodeConnection {
  readonly url: string;
  status(): Promise<NodeStatus>;
  /** broadcast_tx_sync: CheckTx's answer. */
  broadcastTxSync(tx: Uint8Array): Promise<CheckTxResult>;
  /** The transaction with this hash (upper-case hex) once the node has indexed it. */
  findTx(hash: string): Promise<IncludedTx | undefined>;
  /** block_results' finalize-block events of one height. */
  blockEvents(height: number): Promise<unknown[]>;
  /** One ABCI query at the latest height: the response's value bytes. */
  abci(path: string, data: Uint8Array, signal?: AbortSignal): Promise<Uint8Array>;
  close(): void;
}

/**
 * ABCI queries at once (the node answers each on its own; more only queue). A 100,000-lease
 * listing is 1,000 of them in a row, so each must cost little: cosmjs's client goes through
 * fetch (web streams, a resource-timing entry, base64 in JavaScript) for every one.
 */
const QUERY_CONNECTIONS = 16;

export async function connectNode(
  url: string,
  requestTimeoutMs = 10_000,
  clock: Clock = systemClock,
  /** Each query's path and its duration, answered or not (the chain client's metrics). */
  onQuery: (path: string, seconds: number) => void = () => {},
): Promise<NodeConnection> {
  let http = url;
  if (/^wss?:\/\//.test(http)) http = http.replace(/^ws/, "http").replace(/\/websocket\/?$/, "");
  if (!/^https?:\/\//.test(http))
    throw new FredError("ERR_CONFIG", `chain RPC URL must be http(s) or ws(s): ${url}`);
  const target = new URL(http);
  const pool = new Pool(target.origin, { connections: QUERY_CONNECTIONS });
  let id = 0;
  const timedOut = (what: string) => () =>
    new FredError(
      "ERR_CHAIN_RPC_TIMEOUT",
      `${what}: chain node did not answer within ${requestTimeoutMs} ms`,
      {
        retryable: true,
      },
    );
  /** One JSON-RPC call on the pool: the parsed reply (an error reply is the caller's to read). */
  const call = async (
    method: string,
    params: unknown,
    what: string,
    signal: AbortSignal,
  ): Promise<unknown> => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params });
    const res = await pool.request({
      path: target.pathname,
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal,
    });
    if (res.statusCode < 200 || res.statusCode > 299) {
      await res.body.dump();
      // A 5xx is the node (or its proxy) failing, worth another try; a 4xx is this query refused.
      const code = res.statusCode >= 500 ? "ERR_CHAIN_UNAVAILABLE" : "ERR_CHAIN_QUERY";
      throw new FredError(code, `${what}: chain node answered HTTP ${res.statusCode}`, { retryable: true });
    }
    try {
      return JSON.parse(await res.body.text());
    } catch (err) {
      throw new FredError("ERR_CHAIN_QUERY", `${what}: chain node sent a reply that is not JSON`, {
        retryable: true,
        cause: err,
      });
    }
  };
  /**
   * One call's result. A JSON-RPC error is thrown as cosmjs's client threw it (the error
   * object as JSON in the message), which chainError and the tx path classify by its words.
   */
  const result = async (method: string, params: Record<string, unknown>): Promise<unknown> => {
    const reply = (await withDeadline(clock, requestTimeoutMs, undefined, timedOut(method), (s) =>
      call(method, params, method, s),
    )) as { error?: unknown; result?: unknown } | null;
    if (reply?.error !== undefined) throw new Error(JSON.stringify(reply.error));
    if (reply === null || typeof reply !== "object" || !("result" in reply))
      throw new FredError("ERR_CHAIN_QUERY", `${method}: malformed JSON-RPC reply`, { retryable: true });
    return reply.result;
  };
  const query = async (path: string, data: Uint8Array, signal: AbortSignal): Promise<Uint8Array> => {
    const params = { path, data: Buffer.from(data).toString("hex"), prove: false };
    return abciValue(await call("abci_query", params, path, signal), path);
  };
  const abci = async (path: string, data: Uint8Array, signal?: AbortSignal): Promise<Uint8Array> => {
    const started = performance.now();
    try {
      return await withDeadline(clock, requestTimeoutMs, signal, timedOut(path), (s) => query(path, data, s));
    } finally {
      onQuery(path, (performance.now() - started) / 1000);
    }
  };
  return {
    url: http,
    status: async () => decodeStatus(await result("status", {})),
    broadcastTxSync: async (tx) =>
      decodeBroadcastTxSync(await result("broadcast_tx_sync", { tx: Buffer.from(tx).toString("base64") })),
    findTx: async (hash) => decodeFirstTx(await result("tx_search", { query: `tx.hash='${hash}'` })),
    blockEvents: async (height) =>
      decodeBlockEvents(await result("block_results", { height: String(height) })),
    abci,
    close: () => {
      void pool.close();
    },
  };
}

/**
 * The value of a JSON-RPC `abci_query` reply. An error reply or a non-zero code is the
 * node's refusal, typed here: NotFound (the node's own words for a missing key) is
 * `ERR_CHAIN_NOT_FOUND`, anything else `ERR_CHAIN_QUERY`; a reply off the protocol is
 * `ERR_CHAIN_QUERY` too.
 */
function abciValue(reply: unknown, path: string): Uint8Array {
  const r = reply as { error?: unknown; result?: { response?: Record<string, unknown> } } | null;
  if (r?.error !== undefined) throw nodeRefusal(path, JSON.stringify(r.error));
  const response = r?.result?.response;
  if (typeof response !== "object" || response === null) throw offProtocol(path, "no response");
  const code = Number(response.code ?? 0);
  if (code !== 0) throw nodeRefusal(path, `query failed with (${code}): ${String(response.log ?? "")}`);
  if (!response.height) throw offProtocol(path, "no query height");
  const value = response.value;
  if (value !== null && value !== undefined && typeof value !== "string") throw offProtocol(path, "value");
  return Buffer.from(value ?? "", "base64");
}

function nodeRefusal(path: string, text: string): FredError {
  if (NOT_FOUND.test(text)) return new FredError("ERR_CHAIN_NOT_FOUND", `${path}: not found`);
  return new FredError("ERR_CHAIN_QUERY", `${path}: ${text}`, { retryable: true });
}

function offProtocol(path: string, what: string): FredError {
  return new FredError("ERR_CHAIN_QUERY", `${path}: malformed abci_query reply (${what})`, {
    retryable: true,
  });
}

/** The websocket URL CometBFT serves next to an HTTP RPC URL. */
export function websocketUrlFor(rpcUrl: string): string {
  return `${rpcUrl.replace(/^http/, "ws").replace(/\/$/, "")}/websocket`;
}

/** How the node words a missing key (gRPC NotFound, or the store's own text). */
const NOT_FOUND = /rpc error: code = NotFound|key not found/i;
/**
 * Transport failures as fetch-based clients word them (their errors carry no code); our own
 * requests throw typed FredErrors, and undici's errors carry a code (`transportCode`). A
 * `TimeoutError` (an AbortSignal.timeout) is typed `ERR_CHAIN_RPC_TIMEOUT` like ours.
 */
const TRANSPORT =
  /fetch failed|ECONNREFUSED|ECONNRESET|timeout|aborted|socket hang up|Bad status on response: 5/i;

/** A failure of the cosmjs client or the transport, typed (FredErrors pass through as thrown). */
export function chainError(err: unknown, what: string): FredError {
  if (err instanceof FredError) return err;
  const text = err instanceof Error ? err.message : String(err);
  const causeText = err instanceof Error && err.cause instanceof Error ? ` ${err.cause.message}` : "";
  if (NOT_FOUND.test(text)) return new FredError("ERR_CHAIN_NOT_FOUND", `${what}: not found`, { cause: err });
  if (err instanceof Error && err.name === "TimeoutError")
    return new FredError("ERR_CHAIN_RPC_TIMEOUT", `${what}: chain node did not answer in time`, {
      retryable: true,
      cause: err,
    });
  if (TRANSPORT.test(text + causeText) || transportCode(err))
    return new FredError("ERR_CHAIN_UNAVAILABLE", `${what}: chain node unreachable (${text})`, {
      retryable: true,
      cause: err,
    });
  return new FredError("ERR_CHAIN_QUERY", `${what}: ${text}`, { retryable: true, cause: err });
}

/** An undici transport error (`UND_ERR_…`) or a socket errno (`ECONNRESET`, `EPIPE`, …). */
function transportCode(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^(UND_ERR_|E[A-Z]+$)/.test(code);
}

/** One protobuf ABCI query with typed request/response codecs. */
export async function abciQuery<Req, Res>(
  conn: NodeConnection,
  path: string,
  reqCodec: { encode(m: Req): { finish(): Uint8Array } },
  resCodec: { decode(b: Uint8Array): Res },
  request: Req,
  signal?: AbortSignal,
): Promise<Res> {
  signal?.throwIfAborted();
  try {
    return resCodec.decode(await conn.abci(path, reqCodec.encode(request).finish(), signal));
  } catch (err) {
    throw chainError(err, path);
  }
}

/** Like abciQuery, but NotFound is `undefined`. */
export async function abciQueryOptional<Req, Res>(
  conn: NodeConnection,
  path: string,
  reqCodec: { encode(m: Req): { finish(): Uint8Array } },
  resCodec: { decode(b: Uint8Array): Res },
  request: Req,
  signal?: AbortSignal,
): Promise<Res | undefined> {
  try {
    return await abciQuery(conn, path, reqCodec, resCodec, request, signal);
  } catch (err) {
    if (err instanceof FredError && err.code === "ERR_CHAIN_NOT_FOUND") return undefined;
    throw err;
  }
}
