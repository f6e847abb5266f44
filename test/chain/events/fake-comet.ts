/**
 * A websocket endpoint that speaks the subscription side of CometBFT 0.38's JSON-RPC, for
 * feed unit tests that need exact control over frames and timing. Tests against the real
 * devnet process live in test/chain/devnet/.
 */
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";

export interface FakeComet {
  url: string;
  subscriptions: { id: unknown; query: string }[];
  connections: number;
  push(frame: string): void;
  dropAll(): void;
  close(): Promise<void>;
}

export async function startFakeComet(
  opts: { refuse?: (query: string) => boolean; autoPong?: boolean; port?: number } = {},
): Promise<FakeComet> {
  const wss = new WebSocketServer({
    host: "127.0.0.1",
    port: opts.port ?? 0,
    autoPong: opts.autoPong ?? true,
  });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const port = (wss.address() as AddressInfo).port;
  const fake: FakeComet = {
    url: `ws://127.0.0.1:${port}/websocket`,
    subscriptions: [],
    connections: 0,
    push(frame) {
      for (const c of wss.clients) if (c.readyState === WebSocket.OPEN) c.send(frame);
    },
    dropAll() {
      for (const c of wss.clients) c.terminate();
    },
    close() {
      for (const c of wss.clients) c.terminate();
      return new Promise((resolve) => wss.close(() => resolve()));
    },
  };
  wss.on("connection", (socket) => {
    fake.connections++;
    socket.on("message", (data) => {
      const req = JSON.parse(String(data)) as { id: unknown; method: string; params: { query: string } };
      if (req.method !== "subscribe") return;
      if (opts.refuse?.(req.params.query)) {
        socket.send(
          JSON.stringify({
            jsonrpc: "2.0",
            id: req.id,
            error: { code: -32603, message: "Internal error", data: "refused" },
          }),
        );
        return;
      }
      fake.subscriptions.push({ id: req.id, query: req.params.query });
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: req.id, result: {} }));
    });
  });
  return fake;
}
