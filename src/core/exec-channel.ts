import { MANIFEST_LIMITS } from "./manifest/index.ts";

/**
 * A shell session's wire, once for every side (tenant route, providerd's relay, the
 * backend contract route, the CLI): Kubernetes' `v5.channel.k8s.io` framing, so a client
 * written for `kubectl exec` speaks it. Every WebSocket message is binary; its first byte
 * names the channel and the rest is that channel's data.
 *
 * - 0 stdin (client → server), 1 stdout, 2 stderr (server → client);
 * - 3 status: one JSON object once the command exited, shaped as Kubernetes' `Status`
 *   (`{"metadata":{},"status":"Success"}`, or a Failure whose cause carries the exit code);
 * - 4 resize (client → server): `{"Width":cols,"Height":rows}`;
 * - 255 close of a stream: one byte naming it (`[255, 0]`: stdin is closed).
 */
export const SHELL_SUBPROTOCOL = "v5.channel.k8s.io";

export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;

/**
 * How a session's WebSocket ends (documented in docs/tenant-api.md). 1000 follows the
 * status frame; 4000-4999 are ours.
 */
export const SHELL_CLOSE = {
  exited: 1000,
  shutdown: 1001,
  malformed: 1008,
  tooLarge: 1009,
  backendFailed: 1011,
  idle: 4000,
  maxDuration: 4001,
} as const;

export const SHELL_LIMITS = {
  /** Largest message either way, the channel byte included. */
  maxFrameBytes: 64 * 1024,
  maxArgs: 64,
  maxArgvBytes: 16 * 1024,
  maxInstance: 9_999,
  /** A terminal size's largest side. */
  maxTerminalSide: 10_000,
} as const;

/** The command a session runs when the request names none: the image's shell. */
export const DEFAULT_SHELL_ARGV: readonly string[] = ["/bin/sh"];

export function frame(channel: number, data: Uint8Array | string = new Uint8Array()): Buffer {
  const body = typeof data === "string" ? Buffer.from(data) : data;
  const out = Buffer.allocUnsafe(body.length + 1);
  out[0] = channel;
  out.set(body, 1);
  return out;
}

/** The status channel's payload for an exit code, as Kubernetes clients parse it. */
export function exitStatus(code: number): Buffer {
  if (code === 0) return Buffer.from(JSON.stringify({ metadata: {}, status: "Success" }));
  return Buffer.from(
    JSON.stringify({
      metadata: {},
      status: "Failure",
      message: `command terminated with non-zero exit code: ${code}`,
      reason: "NonZeroExitCode",
      details: { causes: [{ reason: "ExitCode", message: String(code) }] },
    }),
  );
}

/** The exit code a status payload carries; undefined when it is not one. */
export function parseExitStatus(payload: Uint8Array): number | undefined {
  let status: { status?: unknown; details?: { causes?: { reason?: unknown; message?: unknown }[] } };
  try {
    status = JSON.parse(Buffer.from(payload).toString("utf8")) as typeof status;
  } catch {
    return undefined;
  }
  if (status?.status === "Success") return 0;
  const cause = status?.details?.causes?.find((c) => c?.reason === "ExitCode");
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : undefined;
}

export interface TerminalSize {
  width: number;
  height: number;
}

/** A resize payload, or undefined when it is not `{"Width":n,"Height":n}` with sides 1..10000. */
export function parseResize(payload: Uint8Array): TerminalSize | undefined {
  if (payload.length > 256) return undefined;
  let value: { Width?: unknown; Height?: unknown };
  try {
    value = JSON.parse(Buffer.from(payload).toString("utf8")) as typeof value;
  } catch {
    return undefined;
  }
  const side = (n: unknown) =>
    typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= SHELL_LIMITS.maxTerminalSide;
  if (value === null || typeof value !== "object" || !side(value.Width) || !side(value.Height))
    return undefined;
  return { width: value.Width as number, height: value.Height as number };
}

export function resizePayload(size: TerminalSize): Buffer {
  return Buffer.from(JSON.stringify({ Width: size.width, Height: size.height }));
}

/** What a session runs, and where. */
export interface ExecTarget {
  service: string;
  instance: number;
  tty: boolean;
  argv: string[];
}

/** The query a session is asked with (tenant route and backend route alike); `service` may be left out. */
export type ExecQuery = Omit<ExecTarget, "service"> & { service: string | undefined };

const SERVICE_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/**
 * Reads `service`, `instance` (default 0), `tty` (true/false/1/0, default false) and the
 * repeatable `command` (default the image's shell) from a parsed query string. Throws an
 * Error whose message is safe to show a caller.
 */
export function parseExecQuery(query: Record<string, unknown>): ExecQuery {
  const single = (key: string): string | undefined => {
    const v = query[key];
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw new Error(`${key} may be given once`);
    return v;
  };
  const service = single("service");
  if (
    service !== undefined &&
    (service.length > MANIFEST_LIMITS.serviceNameMaxLength || !SERVICE_NAME.test(service))
  ) {
    throw new Error("service must be a service name of the lease");
  }
  const rawInstance = single("instance");
  if (rawInstance !== undefined && !/^\d{1,4}$/.test(rawInstance)) {
    throw new Error(`instance must be an integer from 0 to ${SHELL_LIMITS.maxInstance}`);
  }
  const rawTty = single("tty");
  if (rawTty !== undefined && !["true", "false", "1", "0"].includes(rawTty)) {
    throw new Error("tty must be true or false");
  }
  const raw = query.command;
  const argv =
    raw === undefined ? [...DEFAULT_SHELL_ARGV] : ((Array.isArray(raw) ? raw : [raw]) as unknown[]);
  if (argv.length > SHELL_LIMITS.maxArgs)
    throw new Error(`command may have at most ${SHELL_LIMITS.maxArgs} arguments`);
  let bytes = 0;
  for (const arg of argv) {
    if (typeof arg !== "string" || arg.includes("\0")) throw new Error("command arguments must be text");
    bytes += Buffer.byteLength(arg);
  }
  if (argv[0] === "") throw new Error("command must not start with an empty argument");
  if (bytes > SHELL_LIMITS.maxArgvBytes)
    throw new Error(`command may be at most ${SHELL_LIMITS.maxArgvBytes} bytes`);
  return {
    service,
    instance: rawInstance === undefined ? 0 : Number(rawInstance),
    tty: rawTty === "true" || rawTty === "1",
    argv: argv as string[],
  };
}

/** The query of an ExecTarget (for `encodeQuery` or URLSearchParams). */
export function execQuery(target: ExecTarget | ExecQuery): Record<string, string | string[]> {
  const q: Record<string, string | string[]> = {
    instance: String(target.instance),
    tty: String(target.tty),
    command: [...target.argv],
  };
  if (target.service !== undefined) q.service = target.service;
  return q;
}
