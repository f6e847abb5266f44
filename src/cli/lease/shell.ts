import type { Command } from "commander";
import type WebSocket from "ws";
import { retry } from "../../core/async/index.ts";
import { commandClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import {
  CHANNEL,
  frame,
  parseExitStatus,
  resizePayload,
  SHELL_CLOSE,
  SHELL_SUBPROTOCOL,
} from "../../core/exec-channel.ts";
import { leaseArg } from "../chain.ts";
import { ExitCode } from "../output.ts";
import { apiForLease, type LeaseFlags, withLeaseFlags } from "./context.ts";
import { refusal, SPENT_TOKEN_RETRIES, type TenantApi } from "./tenant-api.ts";

/**
 * `fred lease shell <uuid> [--service S] [--instance N] [-- cmd ...]`: a command in the
 * lease's running service. Without a command, an interactive terminal (the image's shell;
 * our terminal in raw mode when it is one, its size sent at the start and on every
 * SIGWINCH, Ctrl-D at the prompt ends it). With one, its stdout and stderr on ours and
 * our exit code is its own.
 */
export function registerLeaseShell(lease: Command): void {
  withLeaseFlags(
    lease.command("shell").description("Run a command, or a shell, inside the lease's running service"),
  )
    .argument("<uuid>", "lease UUID")
    .argument("[command...]", "the command and its arguments, after -- (default: an interactive shell)")
    .option("--service <name>", "the service to enter (default: the lease's first)")
    .option("--instance <n>", "the instance of the service, from 0", "0")
    .addHelpText(
      "after",
      `
Exit code: the command's own (1 when the session could not start or broke off).

Examples:
  $ fred lease shell $LEASE --from tenant1 --home .fred/devnet
  $ fred lease shell $LEASE --service db -- psql -c 'select 1' --key-hex $KEY
  $ fred lease shell $LEASE -- sh -c 'ls /data; df -h' --from tenant1 --home .fred/devnet`,
    )
    .action(
      async (uuid: string, command: string[], opts: LeaseFlags & { service?: string; instance: string }) => {
        if (!/^\d{1,4}$/.test(opts.instance)) {
          throw new FredError(
            "ERR_USAGE",
            `--instance must be an integer from 0, got ${JSON.stringify(opts.instance)}`,
          );
        }
        const api = await apiForLease(opts, leaseArg(uuid));
        const code = await runShell(api, uuid, {
          ...(opts.service === undefined ? {} : { service: opts.service }),
          instance: Number(opts.instance),
          argv: command,
        });
        if (code !== 0) throw new ExitCode(code);
      },
    );
}

interface ShellRequest {
  service?: string;
  instance: number;
  /** Empty: an interactive terminal running the image's shell. */
  argv: readonly string[];
}

/** Runs one session; resolves with the command's exit code. */
export async function runShell(api: TenantApi, uuid: string, req: ShellRequest): Promise<number> {
  const tty = req.argv.length === 0;
  const params = new URLSearchParams({ instance: String(req.instance), tty: String(tty) });
  if (req.service !== undefined) params.set("service", req.service);
  for (const arg of req.argv) params.append("command", arg);
  const path = `/v1/leases/${uuid}/shell?${params}`;
  // A shell token is single use, stamped to the second and signed deterministically: another
  // fred process that opened a shell on this lease may have spent this very token. An
  // upgrade with a token of another second settles that (TenantApi picks each at random);
  // refused SPENT_TOKEN_RETRIES more times, it is a real refusal.
  const ws = await retry(
    async () => {
      const socket = api.webSocket(uuid, path, { protocols: [SHELL_SUBPROTOCOL], perMessageDeflate: false });
      try {
        await opened(socket);
        return socket;
      } catch (err) {
        socket.terminate();
        throw err;
      }
    },
    {
      clock: commandClock,
      attempts: 1 + SPENT_TOKEN_RETRIES,
      backoff: { initialMs: 0, maxMs: 0 },
      retryable: (err) => err instanceof FredError && err.details?.status === 401,
    },
  );

  const stdin = process.stdin;
  const raw = tty && stdin.isTTY === true;
  const restore: (() => void)[] = [];
  try {
    if (raw) {
      stdin.setRawMode(true);
      restore.push(() => stdin.setRawMode(false));
    }
    return await new Promise<number>((resolve, reject) => {
      let exitCode: number | undefined;
      const sendSize = () => {
        const { columns, rows } = process.stdout;
        if (columns > 0 && rows > 0)
          ws.send(frame(CHANNEL.resize, resizePayload({ width: columns, height: rows })));
      };
      if (tty && process.stdout.isTTY) {
        sendSize();
        process.on("SIGWINCH", sendSize);
        restore.push(() => process.off("SIGWINCH", sendSize));
      }
      const onData = (chunk: Buffer) => {
        if (ws.readyState === ws.OPEN) ws.send(frame(CHANNEL.stdin, chunk));
      };
      const onEnd = () => {
        if (ws.readyState === ws.OPEN) ws.send(Buffer.from([CHANNEL.close, CHANNEL.stdin]));
      };
      stdin.on("data", onData);
      stdin.once("end", onEnd);
      restore.push(() => {
        stdin.off("data", onData);
        stdin.off("end", onEnd);
        stdin.pause();
      });
      ws.on("message", (data: Buffer) => {
        const payload = data.subarray(1);
        const out =
          data[0] === CHANNEL.stdout
            ? process.stdout
            : data[0] === CHANNEL.stderr
              ? process.stderr
              : undefined;
        if (out !== undefined) {
          // Our terminal or pipe is behind: stop reading the session until it drains.
          if (!out.write(payload)) {
            ws.pause();
            out.once("drain", () => ws.resume());
          }
        } else if (data[0] === CHANNEL.status) exitCode = parseExitStatus(payload);
      });
      ws.on("error", () => {});
      ws.resume();
      ws.on("close", (code, reason) => {
        if (exitCode !== undefined) return resolve(exitCode);
        reject(
          new FredError("ERR_TENANT_API", `the shell session ended: ${closeText(code, reason.toString())}`),
        );
      });
    });
  } finally {
    for (const undo of restore.reverse()) undo();
    ws.terminate();
  }
}

function closeText(code: number, reason: string): string {
  const known: Record<number, string> = {
    [SHELL_CLOSE.idle]: "idle timeout",
    [SHELL_CLOSE.maxDuration]: "maximum session length reached",
    [SHELL_CLOSE.shutdown]: "the provider is shutting down",
    [SHELL_CLOSE.backendFailed]: "the provider's backend ended the session",
    1006: "the connection was lost",
  };
  return `${known[code] ?? reason ?? ""} (close code ${code})`.trim();
}

/** Resolves on the upgrade; rejects with the API's refusal (its message and hint) otherwise. */
function opened(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    ws.once("open", () => {
      // Frames may arrive with the handshake: hold them until runShell listens (it resumes).
      ws.pause();
      resolve();
    });
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (c: Buffer) => {
        if (text.length < 64 * 1024) text += c.toString();
      });
      res.on("end", () => {
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {}
        reject(refusal(res.statusCode ?? 0, body));
      });
    });
    ws.once("error", (err) =>
      reject(new FredError("ERR_TENANT_API", `cannot open the shell: ${err.message}`)),
    );
  });
}
