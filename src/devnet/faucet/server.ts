/**
 * The faucet's HTTP API, the one the CosmJS faucet serves (so its client and scripts written
 * for it work unchanged): `GET /status` as JSON, `POST /credit {"address","denom"}` answered
 * "ok" once the coins are in a block, and every refusal as a plain-text message with the
 * status that faucet uses (400 bad input, 405 wrong method or within the cooldown, 415 not
 * JSON, 422 a denom it does not offer), plus 413 for an oversized body and 429 when the
 * faucet's total rate is spent. Nothing moves on any refusal.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import { formatGoDuration } from "../../core/duration.ts";
import { parseStrictJson } from "../../core/encoding.ts";
import type { Logger } from "../../log.ts";
import { decodeAddress } from "../address.ts";
import type { CreditLimits } from "./limits.ts";
import type { FaucetSender } from "./sender.ts";

/** A credit request is two short strings; anything near this size is not one. */
export const MAX_CREDIT_BODY_BYTES = 16 * 1024;

class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface FaucetServerOptions {
  sender: FaucetSender;
  /** Amount one credit sends, by denom offered. */
  amounts: ReadonlyMap<string, bigint>;
  cooldownMs: number;
  creditsPerMinute: number;
  limits: CreditLimits;
  chainId: string;
  bech32Prefix: string;
  /** The node's RPC URL, shown as `nodeUrl` on /status. */
  nodeUrl: string;
  logger: Logger;
  host?: string;
  port: number;
}

export interface FaucetServer {
  url: string;
  close(): Promise<void>;
}

const WELCOME =
  "fred devnet faucet: GET /status shows the faucet account and its tokens; POST /credit with " +
  '{"address":"manifest1…","denom":"umfx"} sends that denom\'s amount to the address.\n';

export async function startFaucetServer(opts: FaucetServerOptions): Promise<FaucetServer> {
  const { sender, amounts, limits, logger } = opts;
  const app = Fastify({ bodyLimit: MAX_CREDIT_BODY_BYTES, logger: false });
  // The body arrives as text whatever its type: /credit itself says 415 after 405, in that order.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));

  /** Denoms configured and held (above zero) by the faucet account, as the CosmJS faucet offers them. */
  const availableTokens = () => {
    const held = new Set(
      sender
        .balances()
        .filter((c) => c.amount !== "0")
        .map((c) => c.denom),
    );
    return [...amounts.keys()].filter((d) => held.has(d));
  };

  // Browser wallets and explorers call the faucet from their own origin; a preflight is
  // answered here, before routing, on every path (/credit included).
  app.addHook("onRequest", async (req, reply) => {
    reply.header("access-control-allow-origin", "*");
    if (req.method !== "OPTIONS") return;
    return reply
      .code(204)
      .header("access-control-allow-methods", "GET, POST, OPTIONS")
      .header("access-control-allow-headers", "content-type")
      .send();
  });

  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    if (err instanceof HttpRefusal) {
      if (err.retryAfterMs !== undefined)
        reply.header("retry-after", String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))));
      return reply.code(err.status).type("text/plain; charset=utf-8").send(`${err.message}\n`);
    }
    const status = err.statusCode !== undefined && err.statusCode >= 400 ? err.statusCode : 500;
    if (status === 413)
      return reply
        .code(413)
        .type("text/plain; charset=utf-8")
        .send(`request body exceeds ${MAX_CREDIT_BODY_BYTES} bytes\n`);
    if (status >= 500) logger.error({ err }, "faucet request failed");
    return reply
      .code(status)
      .type("text/plain; charset=utf-8")
      .send(status >= 500 ? "internal error\n" : `${err.message}\n`);
  });
  app.setNotFoundHandler(async (_req, reply) => {
    reply
      .code(404)
      .type("text/plain; charset=utf-8")
      .send("not found; the faucet serves /status and /credit\n");
  });

  const welcome = async (_req: FastifyRequest, reply: FastifyReply) => {
    reply.type("text/plain; charset=utf-8").send(WELCOME);
  };
  app.get("/", welcome);
  app.get("/healthz", welcome);

  app.get("/status", async () => {
    const account = { address: sender.address, balance: sender.balances() };
    return {
      status: "ok",
      nodeUrl: opts.nodeUrl,
      chainId: opts.chainId,
      chainTokens: [...amounts.keys()],
      availableTokens: availableTokens(),
      // One account both holds the funds and sends every credit.
      holder: account,
      distributors: [account],
    };
  });

  app.all("/credit", async (req, reply) => {
    if (req.method !== "POST") throw new HttpRefusal(405, "/credit takes a POST request");
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json")
      throw new HttpRefusal(415, "/credit takes a JSON body (content-type: application/json)");
    const { address, denom } = parseCreditBody(typeof req.body === "string" ? req.body : "");
    let recipient: string;
    try {
      decodeAddress(address, opts.bech32Prefix);
      recipient = address.toLowerCase();
    } catch (err) {
      throw new HttpRefusal(
        400,
        `address is not a ${opts.bech32Prefix}1… account address (${(err as Error).message})`,
      );
    }
    const amount = amounts.get(denom);
    const available = availableTokens();
    if (amount === undefined || !available.includes(denom)) {
      throw new HttpRefusal(
        422,
        `denom ${denom} is not available; this faucet offers: ${available.join(", ")}`,
      );
    }
    const key = `${recipient}/${denom}`;
    const refused = limits.take(key);
    if (refused?.reason === "cooldown") {
      throw new HttpRefusal(
        405,
        `${recipient} already received ${denom}; one credit per address and denom every ${formatGoDuration(opts.cooldownMs * 1e6)}`,
        refused.retryAfterMs,
      );
    }
    if (refused?.reason === "rate") {
      throw new HttpRefusal(
        429,
        `the faucet grants at most ${opts.creditsPerMinute} credits a minute; try again shortly`,
        refused.retryAfterMs,
      );
    }
    try {
      const sent = await sender.send(recipient, { denom, amount: amount.toString() });
      reply.header("x-faucet-tx-hash", sent.hash);
    } catch (err) {
      limits.release(key);
      logger.warn({ err, recipient, denom }, "faucet credit failed");
      throw new HttpRefusal(500, `sending tokens failed: ${(err as Error).message}`);
    }
    reply.type("text/plain; charset=utf-8").send("ok");
  });

  const address = await app.listen({ host: opts.host ?? "127.0.0.1", port: opts.port });
  return { url: address.replace("[::1]", "127.0.0.1"), close: () => app.close() };
}

/** `{"address": "…", "denom": "…"}`, both non-empty strings; anything else is a 400. */
function parseCreditBody(text: string): { address: string; denom: string } {
  let body: unknown;
  try {
    body = parseStrictJson(text, MAX_CREDIT_BODY_BYTES);
  } catch (err) {
    throw new HttpRefusal(400, `the body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new HttpRefusal(400, 'the body must be a JSON object {"address": …, "denom": …}');
  const { address, denom, ticker } = body as Record<string, unknown>;
  if (ticker !== undefined)
    throw new HttpRefusal(400, "name the token with 'denom' (CosmJS 0.23 dropped 'ticker')");
  for (const [name, value] of [
    ["address", address],
    ["denom", denom],
  ] as const) {
    if (typeof value !== "string") throw new HttpRefusal(400, `'${name}' must be a string`);
    if (value === "") throw new HttpRefusal(400, `'${name}' must not be empty`);
  }
  return { address: address as string, denom: denom as string };
}
