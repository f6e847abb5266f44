/**
 * The REST (LCD) endpoint: the Cosmos SDK v0.50 gRPC-gateway's JSON over the devnet. A GET
 * route of ./routes.ts is answered by the same gRPC query handler `abci_query` calls (the
 * app's query path), its request filled from the path and query string and its response
 * written as the gateway's protobuf JSON; Simulate takes its request from the JSON body; a
 * broadcast goes to the node's mempool (./broadcast.ts). Errors use the gateway's envelope.
 */

import type { GetTxsEventRequest } from "cosmjs-types/cosmos/tx/v1beta1/service";
import {
  BroadcastTxResponse,
  SimulateRequest,
  SimulateResponse,
} from "cosmjs-types/cosmos/tx/v1beta1/service";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { Logger } from "../../log.ts";
import type { DevnetNode } from "../node.ts";
import { broadcastTx } from "./broadcast.ts";
import { queryFailure, RestError } from "./errors.ts";
import { type AnyCodec, messageJson } from "./proto-json.ts";
import { buildRequest } from "./request-params.ts";
import { matchRoute, QUERY_ROUTES, type QueryRoute } from "./routes.ts";

export const MAX_REST_BODY_BYTES = 2_000_000;

type Params = [string, string[]][];

/** A POST route: the request message comes from the JSON body. */
interface BodyRoute {
  readonly template: string;
  readonly method: string;
  run(node: DevnetNode, body: Params): Promise<unknown> | unknown;
  readonly response: AnyCodec;
}

const SIMULATE = "/cosmos.tx.v1beta1.Service/Simulate";

export const BODY_ROUTES: readonly BodyRoute[] = [
  {
    template: "/cosmos/tx/v1beta1/txs",
    method: "/cosmos.tx.v1beta1.Service/BroadcastTx",
    run: (node, body) => broadcastTx(node, body),
    response: BroadcastTxResponse as unknown as AnyCodec,
  },
  {
    template: "/cosmos/tx/v1beta1/simulate",
    method: SIMULATE,
    run: (node, body) => {
      const req = buildRequest(SimulateRequest as unknown as AnyCodec, body) as SimulateRequest;
      return SimulateResponse.decode(runQuery(node, SIMULATE, SimulateRequest.encode(req).finish()));
    },
    response: SimulateResponse as unknown as AnyCodec,
  },
];

function runQuery(node: DevnetNode, method: string, request: Uint8Array): Uint8Array {
  const r = node.app.query(method, request, node.queryBlock());
  if (r.code !== 0) throw queryFailure(r);
  return r.value;
}

/**
 * GetTxsEvent of SDK v0.50 reads `query`; older clients send `events` (one condition each),
 * which the older SDK joined with AND. Accept both.
 */
function adjustRequest(route: QueryRoute, req: unknown): unknown {
  if (route.method !== "/cosmos.tx.v1beta1.Service/GetTxsEvent") return req;
  const r = req as GetTxsEventRequest;
  if (r.query === "" && r.events.length > 0) r.query = r.events.join(" AND ");
  return r;
}

function queryParams(url: string): Params {
  const q = url.indexOf("?");
  const out = new Map<string, string[]>();
  if (q < 0) return [];
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) {
    const list = out.get(k);
    if (list) list.push(v);
    else out.set(k, [v]);
  }
  return [...out];
}

/** A JSON body flattened to dotted proto field paths, the same shape as query parameters. */
function bodyParams(text: string): Params {
  if (text.trim() === "") return [];
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new RestError("InvalidArgument", (err as Error).message);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new RestError("InvalidArgument", "the request body must be a JSON object");
  const out: Params = [];
  const walk = (prefix: string, value: unknown) => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) out.push([prefix, value.map(String)]);
    else if (typeof value === "object")
      for (const [k, v] of Object.entries(value)) walk(prefix === "" ? k : `${prefix}.${k}`, v);
    else out.push([prefix, [String(value)]]);
  };
  walk("", body);
  return out;
}

function send(reply: FastifyReply, status: number, body: unknown, height: number): void {
  reply
    .code(status)
    .header("content-type", "application/json")
    // The SDK's query server reports the height it answered at; the gateway forwards it.
    .header("grpc-metadata-x-cosmos-block-height", String(height))
    // A Buffer, so the content type stays exactly the gateway's (no charset parameter).
    .send(Buffer.from(JSON.stringify(body)));
}

function unmatched(path: string, method: string): RestError {
  // grpc-gateway with the SDK's proto error handler: a path known under another method is
  // "Method Not Allowed", any other path "Not Implemented", both as Unimplemented (HTTP 501).
  const otherMethod =
    method === "GET"
      ? matchRoute(BODY_ROUTES, path) !== undefined
      : matchRoute(QUERY_ROUTES, path) !== undefined;
  return new RestError("Unimplemented", otherMethod ? "Method Not Allowed" : "Not Implemented");
}

export interface RestServerOptions {
  node: DevnetNode;
  logger: Logger;
  host?: string;
  port: number;
}

export async function startRestServer(
  opts: RestServerOptions,
): Promise<{ app: FastifyInstance; url: string }> {
  const { node, logger } = opts;
  const app = Fastify({ bodyLimit: MAX_REST_BODY_BYTES, logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string", bodyLimit: MAX_REST_BODY_BYTES }, (_req, body, done) =>
    done(null, body),
  );

  const fail = (reply: FastifyReply, err: unknown) => {
    if (err instanceof RestError) return send(reply, err.httpStatus, err.body, node.height);
    logger.error({ err }, "rest gateway request failed");
    const internal = new RestError("Internal", err instanceof Error ? err.message : String(err));
    return send(reply, internal.httpStatus, internal.body, node.height);
  };

  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const tooLarge = err.statusCode === 413;
    const e = new RestError(tooLarge ? "ResourceExhausted" : "InvalidArgument", err.message);
    send(reply, tooLarge ? 413 : e.httpStatus, e.body, node.height);
  });

  // Browser tools (explorers, web wallets) call a local chain's REST port from their own
  // origin, as the SDK allows with enabled-unsafe-cors.
  app.addHook("onRequest", async (_req, reply) => {
    reply.header("access-control-allow-origin", "*");
  });
  app.options("/*", async (_req, reply) => {
    reply
      .code(204)
      .header("access-control-allow-methods", "GET, POST, OPTIONS")
      .header("access-control-allow-headers", "content-type")
      .send();
  });

  app.route({
    method: ["GET", "POST"],
    url: "/*",
    handler: async (req, reply) => {
      const url = req.raw.url ?? "/";
      const path = url.split("?")[0]!;
      try {
        if (req.method === "GET") {
          const match = matchRoute(QUERY_ROUTES, path);
          if (match === undefined) throw unmatched(path, "GET");
          const { route } = match;
          const params: Params = [
            ...match.params.map(([k, v]): [string, string[]] => [k, [v]]),
            ...queryParams(url),
          ];
          const request = adjustRequest(route, buildRequest(route.request, params));
          const bytes = (route.request.encode as (m: unknown) => { finish(): Uint8Array })(request).finish();
          const value = runQuery(node, route.method, bytes);
          return send(reply, 200, messageJson(route.response, route.response.decode(value)), node.height);
        }
        const match = matchRoute(BODY_ROUTES, path);
        if (match === undefined) throw unmatched(path, "POST");
        const body = bodyParams(typeof req.body === "string" ? req.body : "");
        const out = await match.route.run(node, body);
        return send(reply, 200, messageJson(match.route.response, out), node.height);
      } catch (err) {
        return fail(reply, err);
      }
    },
  });

  const address = await app.listen({ host: opts.host ?? "127.0.0.1", port: opts.port });
  return { app, url: address.replace("[::1]", "127.0.0.1") };
}
