import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import { request } from "undici";
import { SIGNATURE_HEADER } from "../auth/hmac.ts";
import { FredError } from "../core/errors.ts";
import { isLoopbackHost } from "../core/host-port.ts";
import { printJson, say } from "./output.ts";

/**
 * `fred loadtest record-callbacks`: a loopback relay that stands where providerd's
 * `callback_base_url` points on a local stack. Each backend callback is passed on to
 * providerd unchanged (URI, signature, body bytes) and its answer returned; a callback
 * providerd accepted (2xx) is recorded as `{"request_uri","body"}` (body in base64) into
 * the fixtures file's "callbacks", keeping the file's other keys, so `fred loadtest
 * --scenario callback` can later replay exactly what the backend sent.
 */
const BODY_LIMIT = 64 * 1024;
const MAX_RECORDS = 10_000;

interface RecordFlags {
  forward: string;
  out: string;
  listenPort: string;
  max: string;
}

const usage = (message: string) => new FredError("ERR_USAGE", message);

function forwardOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usage(`--forward ${text} is not a URL`);
  }
  if (url.protocol !== "http:" || !isLoopbackHost(url.hostname))
    throw usage("--forward must be providerd's http:// URL on loopback (a local stack)");
  return url.origin;
}

function readDoc(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    throw usage(`${file} exists and is not JSON`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw usage(`${file} exists and is not a JSON object`);
  return doc as Record<string, unknown>;
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT) chunks.push(chunk);
    });
    req.once("end", () => resolve(size > BODY_LIMIT ? undefined : Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

export function registerRecordCommand(loadtest: Command): void {
  loadtest
    .command("record-callbacks")
    .description("Relay backend callbacks to a local providerd and record the accepted ones as fixtures")
    .requiredOption("--forward <url>", "providerd's URL on loopback, e.g. http://127.0.0.1:8080")
    .requiredOption("--out <file>", 'fixtures file: its "callbacks" are replaced, other keys kept')
    .option("--listen-port <port>", "port on 127.0.0.1 to listen on (0: any free port)", "0")
    .option("--max <n>", `stop recording after this many callbacks (at most ${MAX_RECORDS})`, "1000")
    .addHelpText(
      "after",
      `
Point providerd's callback_base_url at the printed URL ({"url": …} on stdout), run the
leases (fred loadtest fixtures, then the payload scenario), and stop the relay with
Ctrl-C. Replays need the backend's HMAC secret (--callback-secret).

Examples:
  $ fred loadtest record-callbacks --forward http://127.0.0.1:8080 --listen-port 8090 --out fixtures.json`,
    )
    .action(async (o: RecordFlags) => {
      const origin = forwardOrigin(o.forward);
      const port = Number(o.listenPort);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw usage("--listen-port must be 0 to 65535");
      const max = Number(o.max);
      if (!Number.isSafeInteger(max) || max < 1 || max > MAX_RECORDS)
        throw usage(`--max must be an integer from 1 to ${MAX_RECORDS}`);
      const doc = readDoc(o.out);
      const recorded: { request_uri: string; body: string }[] = [];
      const save = () => {
        writeFileSync(`${o.out}.tmp`, `${JSON.stringify({ ...doc, callbacks: recorded }, null, 2)}\n`);
        renameSync(`${o.out}.tmp`, o.out);
      };
      const relay = async (req: IncomingMessage, res: ServerResponse) => {
        const uri = req.url ?? "/";
        const body = await readBody(req);
        if (
          req.method !== "POST" ||
          !uri.split("?")[0]!.endsWith("/callbacks/provision") ||
          body === undefined
        ) {
          res.writeHead(404).end();
          return;
        }
        const headers: Record<string, string> = {
          "content-type": req.headers["content-type"] ?? "application/json",
        };
        const signature = req.headers[SIGNATURE_HEADER];
        if (typeof signature === "string") headers[SIGNATURE_HEADER] = signature;
        const answer = await request(`${origin}${uri}`, { method: "POST", headers, body });
        const text = Buffer.from(await answer.body.arrayBuffer());
        if (answer.statusCode >= 200 && answer.statusCode < 300 && recorded.length < max) {
          recorded.push({ request_uri: uri, body: body.toString("base64") });
          save();
        }
        res.writeHead(answer.statusCode, { "content-type": "application/json" }).end(text);
      };
      const server = createServer((req, res) => {
        relay(req, res).catch((err: unknown) => {
          say(`fred loadtest record-callbacks: relaying failed: ${(err as Error).message}`);
          if (!res.headersSent) res.writeHead(502).end();
        });
      });
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject).listen(port, "127.0.0.1", () => resolve());
      });
      save();
      printJson({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, out: o.out });
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      say(`fred loadtest record-callbacks: recorded ${recorded.length} callbacks into ${o.out}`);
    });
}
