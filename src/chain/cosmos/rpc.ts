/**
 * The node connection: a cosmjs Comet38Client over HTTP (each request bounded by
 * `requestTimeoutMs`) plus a QueryClient for ABCI queries. Errors become FredErrors:
 * a gRPC NotFound is `ERR_CHAIN_NOT_FOUND` (callers turn it into `undefined`), other
 * query failures `ERR_CHAIN_QUERY`, and transport failures retryable `ERR_CHAIN_UNAVAILABLE`.
 */
import { QueryClient } from "@cosmjs/stargate";
import { Comet38Client, HttpClient } from "@cosmjs/tendermint-rpc";
import { FredError } from "../../core/errors.ts";

export interface NodeConnection {
  readonly url: string;
  readonly comet: Comet38Client;
  readonly query: QueryClient;
  close(): void;
}

export async function connectNode(url: string, requestTimeoutMs = 10_000): Promise<NodeConnection> {
  let http = url;
  if (/^wss?:\/\//.test(http)) http = http.replace(/^ws/, "http").replace(/\/websocket\/?$/, "");
  if (!/^https?:\/\//.test(http))
    throw new FredError("ERR_CONFIG", `chain RPC URL must be http(s) or ws(s): ${url}`);
  const comet = Comet38Client.create(new HttpClient(http, requestTimeoutMs));
  return { url: http, comet, query: QueryClient.withExtensions(comet), close: () => comet.disconnect() };
}

/** The websocket URL CometBFT serves next to an HTTP RPC URL. */
export function websocketUrlFor(rpcUrl: string): string {
  return `${rpcUrl.replace(/^http/, "ws").replace(/\/$/, "")}/websocket`;
}

const NOT_FOUND = /rpc error: code = NotFound|key not found/i;
const TRANSPORT =
  /fetch failed|ECONNREFUSED|ECONNRESET|timeout|aborted|socket hang up|Bad status on response: 5/i;

export function chainError(err: unknown, what: string): FredError {
  if (err instanceof FredError) return err;
  const text = err instanceof Error ? err.message : String(err);
  const causeText = err instanceof Error && err.cause instanceof Error ? ` ${err.cause.message}` : "";
  if (NOT_FOUND.test(text)) return new FredError("ERR_CHAIN_NOT_FOUND", `${what}: not found`, { cause: err });
  if (TRANSPORT.test(text + causeText) || (err instanceof Error && err.name === "TimeoutError"))
    return new FredError("ERR_CHAIN_UNAVAILABLE", `${what}: chain node unreachable (${text})`, {
      retryable: true,
      cause: err,
    });
  return new FredError("ERR_CHAIN_QUERY", `${what}: ${text}`, { retryable: true, cause: err });
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
    const res = await conn.query.queryAbci(path, reqCodec.encode(request).finish());
    return resCodec.decode(res.value);
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
