import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import WebSocket from "ws";

/**
 * A test WebSocket client that records every frame and how the connection ended, so a
 * test awaits "the next frame" or "the close" instead of sleeping.
 */
export class WsClient {
  readonly ws: WebSocket;
  readonly frames: Record<string, unknown>[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #waiters: (() => void)[] = [];

  constructor(url: string, opts: WebSocket.ClientOptions = {}) {
    this.ws = new WebSocket(url, opts);
    this.ws.on("message", (data) => {
      this.frames.push(JSON.parse(String(data)) as Record<string, unknown>);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => {
      this.ws.on("close", (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const w of this.#waiters.splice(0)) w();
      });
    });
    this.ws.on("error", () => {});
  }

  /** Resolves once the upgrade succeeded; rejects with the HTTP status when it was refused. */
  async open(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.ws.once("open", () => resolve());
      this.ws.once("unexpected-response", (_req, res) => reject(new HttpRefusal(res.statusCode ?? 0)));
      this.ws.once("error", reject);
    });
    return this;
  }

  /** Waits until at least `n` frames arrived (or the socket closed first: then throws). */
  async frame(n: number): Promise<Record<string, unknown>> {
    while (this.frames.length < n) {
      if (this.ws.readyState === WebSocket.CLOSED) {
        throw new Error(`closed after ${this.frames.length} frames, wanted ${n}`);
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return this.frames[n - 1]!;
  }

  async pinged(): Promise<void> {
    await once(this.ws, "ping");
  }

  /**
   * Pings the server and waits for its pong: the server reads frames in order, so once
   * this returns it has also processed everything the client sent before (a pong).
   */
  async roundTrip(): Promise<void> {
    const pong = once(this.ws, "pong");
    this.ws.ping();
    await pong;
  }

  close(): void {
    this.ws.terminate();
  }
}

export class HttpRefusal extends Error {
  constructor(readonly status: number) {
    super(`upgrade refused with HTTP ${status}`);
  }
}

export function wsUrl(httpUrl: string, path: string): string {
  return `${httpUrl.replace(/^http/, "ws")}${path}`;
}

/**
 * A WebSocket client that completes the handshake by hand and then never reads again:
 * the slow consumer the server must cut off. Resolves with the socket once 101 arrived.
 */
export async function stalledSubscriber(httpUrl: string, path: string): Promise<Socket> {
  const { hostname, port } = new URL(httpUrl);
  const socket = connect(Number(port), hostname);
  await once(socket, "connect");
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let head = "";
  while (!head.includes("\r\n\r\n")) head += String((await once(socket, "data"))[0]);
  if (!head.startsWith("HTTP/1.1 101")) throw new Error(`handshake refused: ${head.split("\r\n")[0]}`);
  socket.pause();
  return socket;
}
