import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import { listenLoopback } from "../../support/index.ts";

/**
 * A CometBFT JSON-RPC proxy between providerd and the devnet: passes every request
 * through, except ABCI queries on the paths in `failing`, which get a JSON-RPC error (as
 * a node under load or mid-upgrade answers). The fault sits at the process boundary.
 */
export class RpcProxy {
  target = "";
  readonly failing = new Set<string>();
  /**
   * Txs whose bytes contain this text (a message type URL) are refused at CheckTx with sdk
   * code 5, as a node answers a signer that cannot pay.
   */
  refuseTxsWith: string | undefined;
  refused = 0;
  /** Failed answers given, per ABCI path. */
  readonly failed = new Map<string, number>();
  readonly #server: Server;
  url = "";

  constructor() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on(
        "end",
        () => void this.#forward(req.method ?? "POST", req.url ?? "/", Buffer.concat(chunks), res),
      );
    });
  }

  async start(): Promise<this> {
    this.url = (await listenLoopback(this.#server)).url;
    return this;
  }

  async #forward(
    method: string,
    path: string,
    body: Buffer,
    res: import("node:http").ServerResponse,
  ): Promise<void> {
    try {
      const call =
        body.length > 0
          ? (JSON.parse(body.toString()) as { id?: unknown; method?: string; params?: { path?: string } })
          : {};
      const abciPath = call.method === "abci_query" ? call.params?.path : undefined;
      if (abciPath !== undefined && this.failing.has(abciPath)) {
        this.failed.set(abciPath, (this.failed.get(abciPath) ?? 0) + 1);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: call.id,
            error: { code: -32603, message: "Internal error", data: "injected by the test proxy" },
          }),
        );
        return;
      }
      const txParam =
        call.method === "broadcast_tx_sync" ? (call.params as { tx?: string } | undefined)?.tx : undefined;
      const tx = txParam === undefined ? undefined : Buffer.from(txParam, "base64");
      if (tx !== undefined && this.refuseTxsWith !== undefined && tx.includes(this.refuseTxsWith)) {
        this.refused++;
        res.writeHead(200, { "content-type": "application/json" });
        const hash = createHash("sha256").update(tx).digest("hex").toUpperCase();
        const log = "spendable balance 0umfx is smaller than 5umfx: insufficient funds";
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: call.id,
            result: { code: 5, codespace: "sdk", log, data: "", hash },
          }),
        );
        return;
      }
      const upstream = await fetch(`${this.target}${path}`, {
        method,
        headers: { "content-type": "application/json" },
        ...(method === "GET" ? {} : { body }),
      });
      res.writeHead(upstream.status, { "content-type": "application/json" });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    } catch (err) {
      res.writeHead(502);
      res.end(String(err));
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
