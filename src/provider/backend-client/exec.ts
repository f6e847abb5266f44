import { connect } from "node:net";
import WebSocket from "ws";
import { execPath, STORAGE_HEADER } from "../../core/backend-contract/index.ts";
import type { Clock } from "../../core/clock.ts";
import { parseStrictJson } from "../../core/encoding.ts";
import { parseBackendError } from "../../core/envelope.ts";
import { FredError } from "../../core/errors.ts";
import { type ExecQuery, execQuery, SHELL_LIMITS, SHELL_SUBPROTOCOL } from "../../core/exec-channel.ts";
import type { BackendTransport } from "./http.ts";

/**
 * Opens a shell session on a backend: the signed `GET /shell/{uuid}` upgraded to a
 * WebSocket. Resolves with the open socket once the backend accepted (101, the shell
 * subprotocol, its storage identity); rejects with ERR_BACKEND_STATUS (details: status and
 * the envelope's code) when it answered otherwise, ERR_BACKEND_TIMEOUT when it did not
 * answer within the backend's timeout, ERR_BACKEND_TRANSPORT when the connection failed,
 * or the signal's reason. Whatever fails, the socket is gone: nothing is left open. The
 * socket comes paused: call `resume()` once its listeners are attached.
 */
export function openExecSocket(
  transport: BackendTransport,
  clock: Clock,
  leaseUuid: string,
  target: ExecQuery,
  signal: AbortSignal,
): Promise<WebSocket> {
  const { uri, headers } = transport.sign("GET", execPath(leaseUuid), execQuery(target));
  const url = `${transport.url.replace(/^http/, "ws").replace(/\/$/, "")}${uri}`;
  const name = transport.name;
  return new Promise((resolve, reject) => {
    const socketPath = transport.socketPath;
    const ws = new WebSocket(url, [SHELL_SUBPROTOCOL], {
      headers,
      maxPayload: SHELL_LIMITS.maxFrameBytes,
      perMessageDeflate: false,
      ...(transport.tls ?? {}),
      // A co-located backend on a Unix socket: the same upgrade, over the socket.
      ...(socketPath === "" ? {} : { createConnection: () => connect(socketPath) }),
    });
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      ws.removeAllListeners();
      ws.on("error", () => {});
      ws.terminate();
      reject(err);
    };
    const cancelTimer = clock.setTimer(transport.timeoutMs, () =>
      fail(
        new FredError(
          "ERR_BACKEND_TIMEOUT",
          `backend ${name}: no shell upgrade within ${transport.timeoutMs} ms`,
          {
            retryable: true,
          },
        ),
      ),
    );
    const onAbort = () => fail(signal.reason);
    const cleanup = () => {
      cancelTimer();
      signal.removeEventListener("abort", onAbort);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    ws.once("upgrade", (res) => {
      try {
        transport.checkStorageHeader(res.headers[STORAGE_HEADER]);
      } catch (err) {
        fail(err);
      }
    });
    ws.once("open", () => {
      if (settled) return;
      if (ws.protocol !== SHELL_SUBPROTOCOL) {
        return fail(
          new FredError(
            "ERR_BACKEND_MALFORMED",
            `backend ${name}: shell answered without ${SHELL_SUBPROTOCOL}`,
          ),
        );
      }
      settled = true;
      cleanup();
      // The command may write before whoever relays it listens: nothing is read (or lost)
      // until the caller attaches its listeners and resumes the socket.
      ws.pause();
      resolve(ws);
    });
    ws.once("unexpected-response", (_req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size <= 64 * 1024) chunks.push(c);
      });
      res.on("end", () => {
        let code: string | undefined;
        let error = "";
        try {
          const envelope = parseBackendError(parseStrictJson(Buffer.concat(chunks), 64 * 1024));
          code = envelope?.code;
          error = envelope?.error ?? "";
        } catch {}
        const status = res.statusCode ?? 0;
        fail(
          new FredError("ERR_BACKEND_STATUS", `backend ${name}: shell refused with ${status} ${error}`, {
            details: { status, ...(code === undefined ? {} : { code }) },
          }),
        );
      });
      res.on("error", (err) => fail(err));
    });
    ws.once("error", (err) =>
      fail(
        new FredError("ERR_BACKEND_TRANSPORT", `backend ${name}: ${err.message}`, {
          retryable: true,
          cause: err,
        }),
      ),
    );
  });
}
