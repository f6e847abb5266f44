import type WebSocket from "ws";
import { RateBuckets } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import { CHANNEL, parseExitStatus, parseResize, SHELL_CLOSE } from "../../core/exec-channel.ts";

/**
 * One shell session's relay between the tenant's WebSocket and the backend's, with the
 * session's limits. Nothing is buffered without bound: each side stops reading the other
 * while its own send buffer is past `maxBufferedBytes` (ws `pause`), output is paced to
 * `outputBytesPerSecond` the same way (backpressure, never a drop), and resizes are
 * coalesced (the latest one, at most one per `resizeIntervalMs`). A tenant that stops
 * reading stops the command's output with it; with nothing moving, the idle timeout ends
 * the session and the socket is dropped without a closing handshake it would not read.
 */
export interface RelayLimits {
  idleMs: number;
  maxDurationMs: number;
  outputBytesPerSecond: number;
  maxBufferedBytes: number;
  resizeIntervalMs: number;
}

export type EndReason =
  | "exited"
  | "client_closed"
  | "idle_timeout"
  | "max_duration"
  | "client_not_reading"
  | "malformed_frame"
  | "frame_too_large"
  | "backend_failed"
  | "shutdown";

export interface RelayResult {
  ended: EndReason;
  exitCode: number | undefined;
  bytesIn: number;
  bytesOut: number;
}

export interface Relay {
  readonly done: Promise<RelayResult>;
  /** Ends the session from outside (shutdown). */
  stop(code: number, reason: string): void;
}

export function relayShell(tenant: WebSocket, backend: WebSocket, limits: RelayLimits, clock: Clock): Relay {
  const result: RelayResult = { ended: "exited", exitCode: undefined, bytesIn: 0, bytesOut: 0 };
  const timers: (() => void)[] = [];
  let finish: (r: RelayResult) => void = () => {};
  const done = new Promise<RelayResult>((resolve) => {
    finish = resolve;
  });
  let ended = false;
  let lastActivity = clock.now();

  const end = (reason: EndReason, code: number, text: string) => {
    if (ended) return;
    ended = true;
    result.ended = reason;
    for (const cancel of timers.splice(0)) cancel();
    backend.removeAllListeners("message");
    backend.on("error", () => {});
    // Closing the backend's socket is what ends the command there (the backend kills it).
    // While we are not reading it, a closing handshake could not finish: drop it instead.
    if (backend.readyState === backend.OPEN && holds.size === 0) backend.close(1000, "session ended");
    else backend.terminate();
    const behind = tenant.bufferedAmount > limits.maxBufferedBytes;
    if (reason === "client_not_reading" || behind) tenant.terminate();
    else if (tenant.readyState === tenant.OPEN) tenant.close(code, text);
    finish(result);
  };

  // Output pauses for two reasons (a full tenant buffer, the rate); it resumes when neither holds.
  const holds = new Set<"buffer" | "rate">();
  const hold = (why: "buffer" | "rate") => {
    holds.add(why);
    backend.pause();
  };
  const release = (why: "buffer" | "rate") => {
    holds.delete(why);
    if (holds.size === 0 && !ended) backend.resume();
  };

  // The output is paced, never dropped: bytes already read from the backend go into the
  // bucket's debt, and the backend is paused until it is paid.
  const output = new RateBuckets(limits.outputBytesPerSecond, limits.outputBytesPerSecond, clock, {
    maxKeys: 1,
  });
  let rateTimer: (() => void) | undefined;
  timers.push(() => rateTimer?.());
  const pace = (bytes: number) => {
    const waitMs = output.spend("output", bytes);
    if (waitMs === 0 || rateTimer !== undefined) return;
    hold("rate");
    rateTimer = clock.setTimer(waitMs, () => {
      rateTimer = undefined;
      release("rate");
    });
  };

  backend.on("message", (data: Buffer) => {
    if (data.length === 0) return;
    const channel = data[0];
    if (channel === CHANNEL.status) result.exitCode = parseExitStatus(data.subarray(1));
    else if (channel === CHANNEL.stdout || channel === CHANNEL.stderr) {
      result.bytesOut += data.length - 1;
      lastActivity = clock.now();
      pace(data.length - 1);
    }
    if (tenant.readyState !== tenant.OPEN) return;
    tenant.send(data, { binary: true }, () => {
      if (holds.has("buffer") && tenant.bufferedAmount <= limits.maxBufferedBytes / 2) release("buffer");
    });
    if (tenant.bufferedAmount > limits.maxBufferedBytes) hold("buffer");
  });
  backend.on("close", () => {
    if (result.exitCode !== undefined) end("exited", SHELL_CLOSE.exited, "exited");
    else end("backend_failed", SHELL_CLOSE.backendFailed, "backend closed the session");
  });
  backend.on("error", () => {});

  // Resizes: the latest wins, sent at most once per interval.
  let pendingResize: Buffer | undefined;
  let resizeTimer: (() => void) | undefined;
  let lastResizeAt = Number.NEGATIVE_INFINITY;
  const flushResize = () => {
    resizeTimer = undefined;
    if (pendingResize === undefined || ended) return;
    lastResizeAt = clock.now();
    backend.send(pendingResize, { binary: true });
    pendingResize = undefined;
  };
  const forward = (data: Buffer) => {
    backend.send(data, { binary: true }, () => {
      if (tenant.isPaused && backend.bufferedAmount <= limits.maxBufferedBytes / 2) tenant.resume();
    });
    if (backend.bufferedAmount > limits.maxBufferedBytes) tenant.pause();
  };

  tenant.on("message", (data: Buffer, isBinary: boolean) => {
    if (ended) return;
    if (!isBinary || data.length === 0)
      return end("malformed_frame", SHELL_CLOSE.malformed, "malformed frame");
    const payload = data.subarray(1);
    switch (data[0]) {
      case CHANNEL.stdin:
        result.bytesIn += payload.length;
        lastActivity = clock.now();
        return forward(data);
      case CHANNEL.resize:
        if (parseResize(payload) === undefined)
          return end("malformed_frame", SHELL_CLOSE.malformed, "malformed resize");
        pendingResize = data;
        if (resizeTimer === undefined) {
          const wait = Math.max(0, lastResizeAt + limits.resizeIntervalMs - clock.now());
          if (wait === 0) flushResize();
          else {
            resizeTimer = clock.setTimer(wait, flushResize);
            timers.push(() => resizeTimer?.());
          }
        }
        return;
      case CHANNEL.close:
        if (payload.length !== 1 || payload[0] !== CHANNEL.stdin) {
          return end("malformed_frame", SHELL_CLOSE.malformed, "only stdin can be closed");
        }
        return forward(data);
      default:
        return end("malformed_frame", SHELL_CLOSE.malformed, "unknown channel");
    }
  });
  tenant.on("error", (err: Error & { code?: string }) => {
    if (err.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH")
      end("frame_too_large", SHELL_CLOSE.tooLarge, "frame too large");
  });
  tenant.on("close", () => end("client_closed", SHELL_CLOSE.exited, ""));

  timers.push(
    clock.setTimer(limits.maxDurationMs, () =>
      end("max_duration", SHELL_CLOSE.maxDuration, "maximum session length reached"),
    ),
  );
  // One timer re-armed for what is left of the idle window, not one per frame.
  let idleTimer: (() => void) | undefined;
  timers.push(() => idleTimer?.());
  const armIdle = (ms: number) => {
    idleTimer = clock.setTimer(ms, () => {
      const idle = clock.now() - lastActivity;
      if (idle < limits.idleMs) return armIdle(limits.idleMs - idle);
      if (tenant.bufferedAmount > limits.maxBufferedBytes || holds.has("buffer")) {
        end("client_not_reading", SHELL_CLOSE.idle, "client not reading");
      } else end("idle_timeout", SHELL_CLOSE.idle, "idle timeout");
    });
  };
  armIdle(limits.idleMs);
  // openExecSocket hands the backend's socket over paused, so no early output was lost.
  backend.resume();

  return { done, stop: (code, reason) => end("shutdown", code, reason) };
}
