/**
 * The CometBFT-compatible RPC endpoint on one port: JSON-RPC 2.0 over HTTP POST on "/"
 * (single or batch), URI requests (GET /<method>?arg=…), and /websocket for the same
 * methods plus subscriptions. Request bodies and websocket frames are size-limited; bad
 * input always gets a JSON-RPC error, never a crash.
 */
import websocket from "@fastify/websocket";
import Fastify, { type FastifyInstance } from "fastify";
import type { WebSocket } from "ws";
import type { Logger } from "../../log.ts";
import { type DevnetNode, RpcError } from "../node.ts";
import { controlAllowed } from "./control-guard.ts";
import { type CallContext, callMethod } from "./methods.ts";
import { type Params, paramsFromQueryString } from "./params.ts";
import { type DevAccountRef, STATUS_PAGE_HEADERS, statusPage } from "./status-page.ts";
import { SubscriptionSession } from "./subscriptions.ts";

export const MAX_BODY_BYTES = 2_000_000;
export const MAX_WS_FRAME_BYTES = 2_000_000;
const MAX_BATCH = 100;

type Id = string | number | null;

interface RpcReply {
  jsonrpc: "2.0";
  id: Id;
  result?: unknown;
  error?: { code: number; message: string; data?: string };
}

export function errorReply(id: Id, err: unknown, log?: Logger): RpcReply {
  if (err instanceof RpcError) {
    const error: RpcReply["error"] = { code: err.code, message: err.message };
    if (err.data !== undefined) error.data = err.data;
    return { jsonrpc: "2.0", id, error };
  }
  log?.error({ err }, "rpc method failed");
  const data = err instanceof Error ? err.message : String(err);
  return { jsonrpc: "2.0", id, error: { code: -32603, message: "Internal error", data } };
}

/** Validates one JSON-RPC request object and runs it. */
export async function handleRequest(
  ctx: CallContext,
  req: unknown,
  log: Logger,
  onSubscription?: (id: Id, method: string, params: Params) => unknown,
): Promise<RpcReply> {
  if (typeof req !== "object" || req === null || Array.isArray(req)) {
    return errorReply(null, new RpcError(-32600, "Invalid Request", "request must be a JSON object"));
  }
  const r = req as Record<string, unknown>;
  const id: Id = typeof r.id === "string" || typeof r.id === "number" ? r.id : null;
  if (r.jsonrpc !== "2.0")
    return errorReply(id, new RpcError(-32600, "Invalid Request", 'jsonrpc must be "2.0"'));
  if (typeof r.method !== "string" || r.method === "") {
    return errorReply(id, new RpcError(-32600, "Invalid Request", "method must be a non-empty string"));
  }
  const p = r.params ?? {};
  if (typeof p !== "object" || p === null || Array.isArray(p)) {
    return errorReply(id, new RpcError(-32602, "Invalid Params", "params must be an object"));
  }
  try {
    if (r.method === "subscribe" || r.method === "unsubscribe" || r.method === "unsubscribe_all") {
      if (!onSubscription) throw new RpcError(-32601, "Method not found");
      return { jsonrpc: "2.0", id, result: onSubscription(id, r.method, p as Params) };
    }
    return { jsonrpc: "2.0", id, result: await callMethod(ctx, r.method, p as Params) };
  } catch (err) {
    return errorReply(id, err, log);
  }
}

async function handleBody(
  ctx: CallContext,
  text: string,
  log: Logger,
  onSub?: Parameters<typeof handleRequest>[3],
) {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return errorReply(
      null,
      new RpcError(-32700, "Parse error", `error unmarshaling request: ${(err as Error).message}`),
    );
  }
  if (Array.isArray(body)) {
    if (body.length === 0) return errorReply(null, new RpcError(-32600, "Invalid Request", "empty batch"));
    if (body.length > MAX_BATCH) {
      return errorReply(
        null,
        new RpcError(-32600, "Invalid Request", `batch holds more than ${MAX_BATCH} requests`),
      );
    }
    const replies: RpcReply[] = [];
    for (const item of body) replies.push(await handleRequest(ctx, item, log, onSub));
    return replies;
  }
  return handleRequest(ctx, body, log, onSub);
}

export interface RpcServerOptions {
  node: DevnetNode;
  logger: Logger;
  /** Dev accounts shown on GET /fred/devnet (names and addresses only). */
  accounts?: readonly DevAccountRef[];
  host?: string;
  port: number;
}

export async function startRpcServer(opts: RpcServerOptions): Promise<{ app: FastifyInstance; url: string }> {
  const { node, logger } = opts;
  const app = Fastify({ bodyLimit: MAX_BODY_BYTES, logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string", bodyLimit: MAX_BODY_BYTES }, (_req, body, done) =>
    done(null, body),
  );
  await app.register(websocket, { options: { maxPayload: MAX_WS_FRAME_BYTES } });
  let rpcAddress = "";
  let url = "";
  // Only a JSON POST may reach the control methods; URI requests and websocket frames never do.
  const ctxFor = (control: boolean): CallContext => ({ node, control, rpcAddress });

  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 ? err.statusCode : 500;
    const code = status === 413 ? -32600 : -32603;
    reply
      .code(status)
      .send(
        errorReply(
          null,
          new RpcError(code, status === 413 ? "Invalid Request" : "Internal error", err.message),
        ),
      );
  });

  app.post("/", async (req, reply) => {
    const text = typeof req.body === "string" ? req.body : "";
    reply
      .header("content-type", "application/json")
      .send(JSON.stringify(await handleBody(ctxFor(controlAllowed(req.ip, req.headers)), text, logger)));
  });

  app.get("/websocket", { websocket: true }, (socket: WebSocket) => {
    const ctx = ctxFor(false);
    const session = new SubscriptionSession(node, (msg) => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(msg));
    });
    socket.on("message", (data, isBinary) => {
      if (isBinary) {
        socket.send(
          JSON.stringify(
            errorReply(null, new RpcError(-32700, "Parse error", "binary frames are not accepted")),
          ),
        );
        return;
      }
      void handleBody(ctx, data.toString(), logger, (id, method, params) =>
        session.handle(id, method, params),
      ).then((reply) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(reply));
      });
    });
    socket.on("close", () => session.close());
    socket.on("error", () => session.close());
  });

  app.get("/:method", async (req, reply) => {
    const { method } = req.params as { method: string };
    let out: unknown;
    try {
      const params = paramsFromQueryString(req.query as Record<string, unknown>);
      out = await handleRequest(ctxFor(false), { jsonrpc: "2.0", id: -1, method, params }, logger);
    } catch (err) {
      out = errorReply(-1, err, logger);
    }
    reply.header("content-type", "application/json").send(JSON.stringify(out));
  });

  app.get("/fred/devnet", async (_req, reply) => {
    reply.headers(STATUS_PAGE_HEADERS).send(statusPage(node, url, opts.accounts ?? []));
  });

  app.get("/", async (_req, reply) => {
    reply
      .type("text/plain")
      .send(
        "fred devnet: CometBFT 0.38 JSON-RPC; POST / or GET /<method>, websocket at /websocket; a page at /fred/devnet\n",
      );
  });

  const address = await app.listen({ host: opts.host ?? "127.0.0.1", port: opts.port });
  url = address.replace("[::1]", "127.0.0.1");
  rpcAddress = url.replace(/^http/, "tcp");
  return { app, url };
}
