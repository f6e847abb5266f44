import WebSocket from "ws";
import { CHANNEL, frame, parseExitStatus, SHELL_SUBPROTOCOL } from "../../../src/core/exec-channel.ts";

/**
 * A test client for `GET /v1/leases/{uuid}/shell`: speaks the channel framing, collects
 * stdout and stderr, the exit code and how the socket closed, so a test waits for "the
 * output contains X" or "the close" instead of sleeping.
 */
export class ShellClient {
  readonly ws: WebSocket;
  stdout = "";
  stderr = "";
  exitCode: number | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #waiters = new Set<() => void>();

  constructor(url: string, opts: WebSocket.ClientOptions & { protocols?: string[] } = {}) {
    this.ws = new WebSocket(url, opts.protocols ?? [SHELL_SUBPROTOCOL], opts);
    this.ws.on("message", (data: Buffer) => {
      const payload = data.subarray(1);
      if (data[0] === CHANNEL.stdout) this.stdout += payload.toString();
      else if (data[0] === CHANNEL.stderr) this.stderr += payload.toString();
      else if (data[0] === CHANNEL.status) this.exitCode = parseExitStatus(payload);
      this.#wake();
    });
    this.closed = new Promise((resolve) => {
      this.ws.on("close", (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.#wake();
      });
    });
    this.ws.on("error", () => {});
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  /** Resolves once upgraded; rejects with the HTTP refusal (status and envelope) otherwise. */
  open(): Promise<this> {
    return new Promise((resolve, reject) => {
      this.ws.once("open", () => resolve(this));
      this.ws.once("unexpected-response", (_req, res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => reject(new ShellRefusal(res.statusCode ?? 0, text)));
      });
      this.ws.once("error", reject);
    });
  }

  send(channel: number, data: string | Buffer = ""): void {
    this.ws.send(frame(channel, data));
  }

  stdin(text: string): void {
    this.send(CHANNEL.stdin, text);
  }

  closeStdin(): void {
    this.ws.send(Buffer.from([CHANNEL.close, CHANNEL.stdin]));
  }

  resize(width: number, height: number): void {
    this.send(CHANNEL.resize, JSON.stringify({ Width: width, Height: height }));
  }

  /** Waits until `test` holds (checked on every frame and at the close), or times out. */
  async waitFor(test: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    if (test()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; stdout=${JSON.stringify(this.stdout.slice(-200))}`));
      }, timeoutMs);
      const check = () => {
        if (!test()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }
}

export class ShellRefusal extends Error {
  readonly body: Record<string, unknown>;
  constructor(
    readonly status: number,
    text: string,
  ) {
    super(`HTTP ${status}: ${text}`);
    try {
      this.body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      this.body = {};
    }
  }
}
