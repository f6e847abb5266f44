import { join } from "node:path";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { listenUnixSocket } from "../../unix-socket.ts";
import type { SweepReport } from "./reconciler.ts";

// Not `import … from "node:http"`: node builds a builtin's ES module namespace by reading
// every export, and node:http's lazy WebSocket export then loads node's bundled undici
// (fetch, WebSocket, web streams: several MB for the life of the daemon, unused).
const { createServer, request } = process.getBuiltinModule("node:http");

/**
 * The operator's on-demand sweep over a local unix socket (`fred providerd reconcile`),
 * beside SIGUSR1. The socket lives next to the placement store (providerd's data) and is
 * created 0600, so only the daemon's own user can ask; there is no HTTP route for it on the
 * network listener. One request, `POST /reconcile`, answers the sweep's report as JSON once
 * the sweep ends (a sweep already running is followed by exactly one more, as for SIGUSR1).
 */
export const CONTROL_SOCKET_NAME = "providerd.sock";
const PATH = "/reconcile";

/** The control socket in the instance's state directory (the placement store's, or state_dir). */
export function controlSocketPath(stateDir: string): string {
  return join(stateDir, CONTROL_SOCKET_NAME);
}

export interface ControlSocket {
  path: string;
  close(): Promise<void>;
}

export async function listenControlSocket(
  path: string,
  reconcile: () => Promise<SweepReport>,
  logger: Logger,
): Promise<ControlSocket> {
  const server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(`${JSON.stringify(body)}\n`);
    };
    if (req.method !== "POST" || req.url !== PATH) return answer(404, { error: "not found" });
    req.resume();
    reconcile().then(
      (report) => answer(200, report),
      (err: unknown) => {
        logger.warn({ err }, "control socket: sweep did not run");
        answer(503, { error: "the sweep did not run (providerd is stopping)" });
      },
    );
  });
  // Never reachable by another user; a live providerd's socket is refused, a dead one's replaced.
  await listenUnixSocket(server, path, {
    mode: 0o600,
    refuse: (message) => new FredError("ERR_CONTROL_SOCKET", message),
  });
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The client side: asks the daemon at `path` for a sweep and resolves to its report. */
export function requestSweep(path: string): Promise<SweepReport> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: path, method: "POST", path: PATH }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => {
        if (res.statusCode !== 200) {
          reject(new FredError("ERR_CONTROL_SOCKET", `providerd answered ${res.statusCode}: ${text.trim()}`));
          return;
        }
        resolve(JSON.parse(text) as SweepReport);
      });
    });
    req.on("error", (err) =>
      reject(
        new FredError("ERR_CONTROL_SOCKET", `cannot reach providerd at ${path}: ${err.message}`, {
          cause: err,
        }),
      ),
    );
    req.end();
  });
}

/**
 * Whether a providerd answers on its control socket now (tools that need it stopped ask).
 * A missing socket, or one nobody listens on (left by a crash), is "no".
 */
export function providerdListening(socketPath: string, timeoutMs = 2_000): Promise<boolean> {
  const { connect } = process.getBuiltinModule("node:net");
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(true)); // accepted but silent: someone is there
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
