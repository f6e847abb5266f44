import { sleepOrAbort } from "../../core/async/index.ts";
import { commandClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { leaseEnded } from "../../core/lease-rules.ts";
import type { TenantApi } from "./tenant-api.ts";

/**
 * Waiting for a lease to settle, as a person watching it would: the event stream pushes
 * each change (printed as progress), and when the stream cannot be used (a proxy that
 * drops upgrades, a closed connection) the status endpoint is polled instead. The answer
 * is always the final `GET status` body, so the caller prints what the API says.
 */
export interface WaitOptions {
  timeoutMs: number;
  /** Also wait for the chain to show the lease ACTIVE (the provider acknowledged it). */
  untilActive: boolean;
  progress: (line: string) => void;
}

const POLL_MS = 1000;
/** While the event stream is open it reports changes; the poll is then only its backstop. */
const STREAMING_POLL_MS = 3000;

export type Verdict = "ready" | "failed" | "ended" | "waiting";

/** What a status body says about the wait: done well, done badly, or not yet. */
export function verdictOf(status: Record<string, unknown>, untilActive: boolean): Verdict {
  const state = status.state;
  if (typeof state === "string" && leaseEnded(state)) return "ended";
  const provision = status.provision_status;
  if (provision === "failed") return "failed";
  if (provision === "ready") return !untilActive || state === "LEASE_STATE_ACTIVE" ? "ready" : "waiting";
  return "waiting";
}

export async function waitSettled(
  api: TenantApi,
  uuid: string,
  o: WaitOptions,
): Promise<Record<string, unknown>> {
  const deadline = AbortSignal.timeout(o.timeoutMs);
  let last = "";
  const show = (status: unknown, state: unknown, extra?: unknown) => {
    const line = `${String(status)} (${String(state ?? "?")
      .replace("LEASE_STATE_", "")
      .toLowerCase()})${typeof extra === "string" && extra !== "" ? `: ${extra}` : ""}`;
    if (line !== last) o.progress(line);
    last = line;
  };
  // The stream shows each change as it happens and wakes the poll below when a frame says
  // the lease settled; the poll always has the last word, and it keeps running while the
  // stream is open, so a stream that stays silent (a change it carries no frame for, such
  // as a rejection on chain) never holds the wait until its timeout.
  let wake = new AbortController();
  let streaming = true;
  const stopStream = new AbortController();
  void streamUntilSettled(api, uuid, AbortSignal.any([deadline, stopStream.signal]), (frame) =>
    show(frame.status, frame.state, frame.error),
  )
    .then(() => wake.abort())
    .catch((err: unknown) => {
      if (!stopStream.signal.aborted)
        o.progress(`event stream unavailable (${(err as Error).message}); polling status`);
    })
    .finally(() => {
      streaming = false;
    });
  try {
    for (;;) {
      const { body } = await api.lease(uuid, "status");
      // While the stream is open it alone prints: a poll answer that was in flight when a
      // frame arrived is older than that frame, and printing it would show a step back.
      if (!streaming || verdictOf(body, o.untilActive) !== "waiting")
        show(body.provision_status ?? "waiting", body.state, body.message);
      if (verdictOf(body, o.untilActive) !== "waiting") return body;
      if (deadline.aborted)
        throw new FredError("ERR_TENANT_API", `lease ${uuid} did not settle within ${o.timeoutMs / 1000} s`, {
          details: { status: body },
        });
      await sleepOrAbort(
        commandClock,
        streaming ? STREAMING_POLL_MS : POLL_MS,
        AbortSignal.any([deadline, wake.signal]),
      ).catch(() => {});
      wake = new AbortController();
    }
  } finally {
    stopStream.abort();
  }
}

interface Frame {
  status?: unknown;
  state?: unknown;
  error?: unknown;
  type?: unknown;
}

/** Resolves when a frame says the provision ended (ready or failed) or the lease ended. */
function streamUntilSettled(
  api: TenantApi,
  uuid: string,
  signal: AbortSignal,
  onFrame: (f: Frame) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = api.webSocket(uuid, `/v1/leases/${uuid}/events`);
    const done = (err?: Error) => {
      signal.removeEventListener("abort", onAbort);
      ws.removeAllListeners();
      ws.on("error", () => {});
      ws.terminate();
      if (err === undefined) resolve();
      else reject(err);
    };
    const onAbort = () => done();
    signal.addEventListener("abort", onAbort, { once: true });
    ws.on("unexpected-response", (_req, res) => done(new Error(`HTTP ${res.statusCode}`)));
    ws.on("error", (err) => done(err));
    ws.on("close", (code) => done(new Error(`closed with ${code}`)));
    ws.on("message", (data) => {
      let frame: Frame;
      try {
        frame = JSON.parse(String(data)) as Frame;
      } catch {
        return;
      }
      if (frame.status === undefined) return;
      onFrame(frame);
      const state = typeof frame.state === "string" ? frame.state : "";
      if (frame.status === "ready" || frame.status === "failed" || leaseEnded(state)) done();
    });
  });
}
