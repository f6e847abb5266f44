/**
 * The controls beside `shell`'s figures through providerd: the thinnest Node processes that
 * can stand where providerd stands on a shell's path. Each takes a WebSocket upgrade on
 * 127.0.0.1 for the backend route named in the request's `x-upstream` header (with the
 * backend's signature from `x-upstream-signature`) and relays it, with no token, limits or
 * accounting:
 *   - `ws`: opens its own WebSocket to the backend with the same `ws` library as providerd
 *     and passes every message both ways untouched;
 *   - `pipe`: forwards the tenant's upgrade request itself (its key, so the backend's
 *     answer completes the tenant's handshake) and from then on copies bytes both ways, no
 *     WebSocket parsing at all: the least any process on the path can do.
 * A round trip through one, against the backend's route called directly, is what one more
 * Node process on the path costs on this machine: the floor of providerd's share.
 * Run by the bench as a child process (argument: ws or pipe); prints {"url": …} once
 * listening, exits on SIGTERM.
 */
import { createServer } from "node:http";
import { connect, type Socket } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { SIGNATURE_HEADER } from "../src/core/backend-contract/index.ts";
import { SHELL_SUBPROTOCOL } from "../src/core/exec-channel.ts";

const mode = process.argv[2] === "pipe" ? "pipe" : "ws";
const server = createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({ noServer: true });

server.on("upgrade", (req, socket, head) => {
  const upstream = new URL(String(req.headers["x-upstream"]));
  const signature = String(req.headers["x-upstream-signature"]);
  if (mode === "ws") {
    wss.handleUpgrade(req, socket, head, (tenant) => {
      const backend = new WebSocket(upstream, [SHELL_SUBPROTOCOL], {
        headers: { [SIGNATURE_HEADER]: signature },
      });
      // Tenant frames wait (paused) until the backend's socket is open.
      tenant.pause();
      backend.once("open", () => {
        tenant.on("message", (data: Buffer) => backend.send(data, { binary: true }));
        backend.on("message", (data: Buffer) => tenant.send(data, { binary: true }));
        tenant.resume();
      });
      backend.on("error", () => tenant.terminate());
      tenant.on("close", () => backend.terminate());
      backend.on("close", () => tenant.close());
    });
    return;
  }
  const backend = connect(Number(upstream.port), upstream.hostname);
  backend.setNoDelay(true);
  (socket as Socket).setNoDelay(true);
  const request = [
    `GET ${upstream.pathname}${upstream.search} HTTP/1.1`,
    `Host: ${upstream.host}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${req.headers["sec-websocket-key"]}`,
    "Sec-WebSocket-Version: 13",
    `Sec-WebSocket-Protocol: ${SHELL_SUBPROTOCOL}`,
    `${SIGNATURE_HEADER}: ${signature}`,
    "",
    "",
  ].join("\r\n");
  backend.write(request);
  if (head.length > 0) backend.write(head);
  socket.pipe(backend);
  backend.pipe(socket);
  backend.on("error", () => socket.destroy());
  socket.on("error", () => backend.destroy());
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number };
  console.log(JSON.stringify({ url: `ws://127.0.0.1:${port}` }));
});
process.once("SIGTERM", () => process.exit(0));
