import { connect } from "node:net";
import { Pool } from "undici";
import WebSocket from "ws";

/**
 * How the fuzz talks to providerd, and what it asserts about every answer. Three
 * clients: undici for well-formed HTTP with arbitrary methods, headers and bodies; a raw
 * socket for bytes no client library would send; `ws` for real upgrades. Each returns
 * what came back, or the transport failure, never throws for an answer it dislikes.
 */
export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Set when no HTTP answer could be read (the connection was closed or reset). */
  transport?: string;
  /** WebSocket cases: the frames received after a 101, and how the socket closed. */
  frames?: string[];
  closeCode?: number;
}

export interface HttpCase {
  method: string;
  /** Path and query, already encoded. */
  target: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
}

export class Wire {
  readonly #pool: Pool;
  readonly #host: string;
  readonly #port: number;

  constructor(readonly base: string) {
    const u = new URL(base);
    this.#host = u.hostname;
    this.#port = Number(u.port);
    this.#pool = new Pool(base, {
      connections: 4,
      pipelining: 1,
      headersTimeout: 20_000,
      bodyTimeout: 20_000,
    });
  }

  async http(c: HttpCase): Promise<Reply> {
    process.stderr.write(
      `${c.method} ${c.target.slice(0, 120)} ${JSON.stringify(c.headers).slice(0, 300)} body=${c.body?.length}\n`,
    );
    try {
      const res = await this.#pool.request({
        path: c.target,
        method: c.method,
        headers: c.headers,
        ...(c.body === undefined ? {} : { body: Buffer.from(c.body) }),
      });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    } catch (err) {
      return { status: 0, headers: {}, text: "", transport: String((err as Error).message ?? err) };
    }
  }

  /** Writes `bytes` as they are, reads until the server closes, parses the first answer. */
  raw(bytes: Buffer): Promise<Reply> {
    return new Promise((resolve) => {
      const socket = connect(this.#port, this.#host);
      const chunks: Buffer[] = [];
      let failure: string | undefined;
      socket.on("data", (d) => chunks.push(d));
      socket.on("error", (err) => {
        failure = err.message;
      });
      socket.on("close", () => resolve(parseRaw(Buffer.concat(chunks), failure)));
      socket.write(bytes);
    });
  }

  /** A real WebSocket upgrade: the first frame (or the close), then the client hangs up. */
  ws(target: string, headers: Record<string, string>): Promise<Reply> {
    return new Promise((resolve) => {
      const url = `ws://${this.#host}:${this.#port}${target}`;
      let ws: WebSocket;
      try {
        ws = new WebSocket(url, { headers, handshakeTimeout: 30_000, maxPayload: 1 << 20 });
      } catch (err) {
        resolve({ status: -1, headers: {}, text: "", transport: `client refused the URL: ${err}` });
        return;
      }
      const frames: string[] = [];
      let reply: Reply | undefined;
      ws.on("upgrade", (res) => {
        reply = { status: res.statusCode ?? 0, headers: res.headers, text: "", frames };
      });
      ws.on("message", (data) => {
        frames.push(String(data));
        ws.terminate();
      });
      ws.on("unexpected-response", (_req, res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => {
          reply = {
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString(),
          };
          ws.terminate();
        });
        res.on("error", () => ws.terminate());
      });
      ws.on("error", (err) => {
        reply ??= { status: 0, headers: {}, text: "", transport: err.message };
      });
      ws.on("close", (code) => {
        const r = reply ?? { status: 0, headers: {}, text: "", transport: "closed before any answer" };
        resolve({ ...r, closeCode: code });
      });
    });
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }
}

function parseRaw(data: Buffer, failure: string | undefined): Reply {
  const text = data.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  if (end < 0 || m === null) {
    return {
      status: 0,
      headers: {},
      text: "",
      transport: failure ?? `no HTTP answer (${data.length} bytes)`,
    };
  }
  const headers: Record<string, string> = {};
  for (const line of text.slice(0, end).split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(end + 4);
  const length = Number(headers["content-length"] ?? Number.NaN);
  if (Number.isInteger(length)) body = body.slice(0, length);
  else if (headers["transfer-encoding"] === "chunked") body = dechunk(body);
  return { status: Number(m[1]), headers, text: body };
}

function dechunk(s: string): string {
  let out = "";
  let i = 0;
  for (;;) {
    const nl = s.indexOf("\r\n", i);
    if (nl < 0) return out;
    const size = Number.parseInt(s.slice(i, nl), 16);
    if (!(size > 0)) return out;
    out += s.slice(nl + 2, nl + 2 + size);
    i = nl + 2 + size + 2;
  }
}

/** Text that must never reach a client: engine, driver and runtime detail. */
const INTERNAL =
  /SQLITE|sqlite3?|better-sqlite|\bError:|TypeError|RangeError|SyntaxError|\n\s+at |\.ts:\d|\.js:\d|node_modules|\/tmp\/|\/home\/|\/work\/|ECONN|EPIPE|docker daemon|Unexpected token|statusCode|FST_/;

/**
 * The properties every answer must have; returns what is wrong, or undefined. Refusals
 * are the documented envelope `{"error","code","reason"?}`, the only 5xx is a documented
 * 503, and no answer carries internal text.
 */
export function answerProblem(
  r: Reply,
  method: string,
  opts: { healthBody?: boolean } = {},
): string | undefined {
  if (r.transport !== undefined) return `no answer: ${r.transport}`;
  if (r.status >= 500 && r.status !== 503) return `status ${r.status}`;
  if (r.headers["x-content-type-options"] !== "nosniff") return "no X-Content-Type-Options: nosniff";
  if (r.status < 400) return undefined;
  if (INTERNAL.test(r.text)) return `internal text in the answer: ${r.text.slice(0, 300)}`;
  if (method === "HEAD" && r.text === "") return undefined;
  if (opts.healthBody && r.status === 503) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    return `error body is not JSON: ${JSON.stringify(r.text.slice(0, 200))}`;
  }
  const b = body as Record<string, unknown>;
  if (typeof b !== "object" || b === null || Array.isArray(b))
    return `error body is not an object: ${r.text}`;
  if (typeof b.error !== "string" || b.error === "") return `envelope without error: ${r.text}`;
  if (b.code !== r.status) return `envelope code ${String(b.code)} on a ${r.status}`;
  if (b.reason !== undefined && typeof b.reason !== "string") return `non-string reason: ${r.text}`;
  const extra = Object.keys(b).filter((k) => k !== "error" && k !== "code" && k !== "reason");
  if (extra.length > 0) return `envelope with extra fields ${extra.join(",")}: ${r.text}`;
  if (r.status === 429 && r.headers["retry-after"] === undefined) return "429 without Retry-After";
  return undefined;
}
