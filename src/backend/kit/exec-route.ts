import websocket from "@fastify/websocket";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import { execPath, STORAGE_HEADER } from "../../core/backend-contract/index.ts";
import {
  CHANNEL,
  type ExecTarget,
  exitStatus,
  frame,
  parseExecQuery,
  parseResize,
  SHELL_CLOSE,
  SHELL_LIMITS,
  SHELL_SUBPROTOCOL,
} from "../../core/exec-channel.ts";
import type { Logger } from "../../log.ts";
import { badRequest, ContractError, notFound, unsupported } from "./errors.ts";
import type { Journal } from "./journal/journal.ts";
import { type ExecSession, ExecTargetMissing, type Substrate } from "./substrate.ts";

/**
 * `GET /shell/{uuid}` of the backend contract: a signed request (the server's preHandler
 * checks the HMAC before anything here runs) upgraded to a WebSocket that relays one
 * command's streams in the `v5.channel.k8s.io` framing. Every refusal (lease not ready,
 * unknown service or instance, no `exec` in the substrate) is an HTTP answer before the
 * upgrade. Output waits while the peer is behind (the socket's buffer past 256 KiB stops
 * reading the command), so memory stays bounded; the command is killed whenever the
 * socket closes, so no session leaves a process behind.
 */
const HIGH_WATER = 256 * 1024;

interface Admitted {
  leaseUuid: string;
  target: ExecTarget;
}

export function registerExecRoute(
  app: FastifyInstance,
  o: { journal: Journal; substrate: Substrate; logger: Logger; storageId: string },
): void {
  const admitted = new WeakMap<FastifyRequest, Admitted>();
  const log = o.logger.child({ component: "exec" });

  function admit(req: FastifyRequest): Admitted {
    const uuid = (req.params as { uuid?: string }).uuid ?? "";
    const lease = o.journal.getLease(uuid);
    if (!lease) throw notFound();
    if (o.substrate.exec === undefined) throw unsupported("exec");
    if (!req.ws) throw badRequest("expected a WebSocket upgrade request");
    const offered = String(req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim());
    if (!offered.includes(SHELL_SUBPROTOCOL))
      throw badRequest(`the subprotocol must be ${SHELL_SUBPROTOCOL}`);
    let query: ReturnType<typeof parseExecQuery>;
    try {
      query = parseExecQuery(req.query as Record<string, unknown>);
    } catch (err) {
      throw badRequest((err as Error).message);
    }
    if (lease.status !== "ready") throw new ContractError(409, "lease is not ready", { code: "not_ready" });
    const service = query.service ?? lease.instances[0]?.service;
    const known = lease.instances.some((i) => i.service === service && i.index === query.instance);
    if (service === undefined || !known) {
      throw new ContractError(404, "unknown service or instance", { code: "unknown_target" });
    }
    return { leaseUuid: uuid, target: { ...query, service } };
  }

  function serve(socket: WebSocket, up: Admitted): void {
    const exec = o.substrate.exec?.bind(o.substrate);
    if (exec === undefined) {
      socket.close(SHELL_CLOSE.backendFailed, "exec unsupported");
      return;
    }
    const abort = new AbortController();
    let session: ExecSession | undefined;
    let ended = false;
    const end = (code: number, reason: string) => {
      if (ended) return;
      ended = true;
      abort.abort();
      if (socket.readyState === socket.OPEN) socket.close(code, reason);
      void session?.kill().catch((err) => log.warn({ err, lease_uuid: up.leaseUuid }, "exec kill failed"));
    };
    socket.on("close", () => end(SHELL_CLOSE.exited, ""));
    // Messages before the command started wait here (bounded by the socket's own flow).
    const early: Buffer[] = [];
    socket.on("message", (data: Buffer, isBinary) => {
      if (!isBinary || data.length === 0) return end(SHELL_CLOSE.malformed, "malformed frame");
      if (session === undefined) {
        if (early.length >= 64) return end(SHELL_CLOSE.malformed, "too many frames before start");
        early.push(data);
        return;
      }
      handle(session, data);
    });
    const handle = (s: ExecSession, data: Buffer) => {
      const payload = data.subarray(1);
      switch (data[0]) {
        case CHANNEL.stdin:
          if (!s.stdin.writableEnded && !s.stdin.write(payload)) {
            socket.pause();
            s.stdin.once("drain", () => socket.resume());
          }
          return;
        case CHANNEL.resize: {
          const size = parseResize(payload);
          if (size === undefined) return end(SHELL_CLOSE.malformed, "malformed resize");
          s.resize(size);
          return;
        }
        case CHANNEL.close:
          if (payload[0] === CHANNEL.stdin) s.stdin.end();
          return;
        default:
          end(SHELL_CLOSE.malformed, "unknown channel");
      }
    };

    void (async () => {
      session = await exec(up.leaseUuid, up.target, abort.signal);
      if (ended) return void session.kill();
      const s = session;
      s.stdin.on("error", () => {});
      const relay = (stream: NodeJS.ReadableStream & { pause(): void; resume(): void }, channel: number) =>
        new Promise<void>((resolve) => {
          stream.on("data", (chunk: Buffer) => {
            if (socket.readyState !== socket.OPEN) return;
            socket.send(frame(channel, chunk), () => {
              if (socket.bufferedAmount < HIGH_WATER / 2) stream.resume();
            });
            if (socket.bufferedAmount > HIGH_WATER) stream.pause();
          });
          stream.once("end", resolve);
          stream.once("close", resolve);
          stream.once("error", resolve);
        });
      for (const data of early.splice(0)) handle(s, data);
      const outputs = [relay(s.stdout, CHANNEL.stdout)];
      if (s.stderr !== undefined) outputs.push(relay(s.stderr, CHANNEL.stderr));
      const code = await s.exit;
      await Promise.all(outputs);
      if (ended || socket.readyState !== socket.OPEN) return;
      socket.send(frame(CHANNEL.status, exitStatus(code)));
      end(SHELL_CLOSE.exited, "exited");
    })().catch((err) => {
      if (err instanceof ExecTargetMissing)
        return end(SHELL_CLOSE.backendFailed, "unknown service or instance");
      log.warn({ err, lease_uuid: up.leaseUuid }, "exec session failed");
      end(SHELL_CLOSE.backendFailed, "exec failed");
    });
  }

  // biome-ignore lint/nursery/noMisusedPromises: Fastify awaits an async plugin (register returns its own thenable).
  void app.register(async (scoped) => {
    await scoped.register(websocket, {
      options: {
        maxPayload: SHELL_LIMITS.maxFrameBytes,
        handleProtocols: (protocols) => (protocols.has(SHELL_SUBPROTOCOL) ? SHELL_SUBPROTOCOL : false),
      },
    });
    // The 101 carries the storage identity too: providerd checks it as on every answer.
    scoped.websocketServer.on("headers", (headers: string[]) =>
      headers.push(`${STORAGE_HEADER}: ${o.storageId}`),
    );
    scoped.route({
      method: "GET",
      url: execPath(":uuid"),
      preHandler: async (req) => {
        admitted.set(req, admit(req));
      },
      handler: async () => {
        throw badRequest("expected a WebSocket upgrade request");
      },
      wsHandler: (socket, req) => {
        const up = admitted.get(req);
        if (up === undefined) socket.close(SHELL_CLOSE.backendFailed, "internal error");
        else serve(socket, up);
      },
    });
  });
}
