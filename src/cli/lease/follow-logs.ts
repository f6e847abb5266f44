import { retry } from "../../core/async/index.ts";
import { commandClock } from "../../core/clock.ts";
import { FredError } from "../../core/errors.ts";
import { printText, say } from "../output.ts";
import type { TenantApi } from "./tenant-api.ts";
import { logLine, type OutputMode } from "./view.ts";

/**
 * `fred lease logs --follow`: the provider's log stream (`GET logs?follow=true` upgraded
 * to a WebSocket), printed as it arrives: in text one line per log line
 * (`<ts> <service/instance> | <line>`, `(stderr)` marked), per instance change and per
 * count of dropped lines; in json each frame as received. Ends (exit 0) when the lease's
 * workload is gone (close 4000) or on Ctrl-C; an interrupted stream (1001 shutdown, 1011,
 * 1013 lifetime) reconnects, asking only for new lines. A provider that answers the
 * upgrade with something else than a stream (an older one answers 200 with the tail, or
 * a backend that cannot stream answers 501) is `unsupported`: the caller polls instead.
 */
export const LEASE_ENDED = 4000;

export type FollowOutcome = "ended" | "stopped" | "unsupported";

export function frameLines(frame: Record<string, unknown>): string[] {
  const who = `${String(frame.service)}/${String(frame.instance)}`;
  if (typeof frame.line === "string") {
    const where = frame.stream === "stderr" ? `${who} (stderr)` : who;
    return [logLine(where, frame.line, String(frame.ts))];
  }
  if (frame.type === "instance") return [`${String(frame.ts)} ${who} · container ${String(frame.event)}`];
  if (frame.type === "dropped")
    return [
      `${who} (${String(frame.stream)}) · ${frame.lines} lines (${frame.bytes} bytes) dropped: over the rate`,
    ];
  return [JSON.stringify(frame)];
}

export async function streamLogs(
  api: TenantApi,
  uuid: string,
  tail: string,
  mode: OutputMode,
  stop: AbortSignal,
): Promise<FollowOutcome> {
  let first = true;
  let outcome = "stopped" as FollowOutcome;
  await retry(
    () =>
      new Promise<void>((resolve, reject) => {
        // After a reconnect only new lines (tail=0): the tail was printed already.
        const path = `/v1/leases/${uuid}/logs?follow=true&tail=${first ? tail : "0"}`;
        first = false;
        const ws = api.webSocket(uuid, path, { unique: false });
        const finish = () => {
          ws.close(1000);
          resolve();
        };
        stop.addEventListener("abort", finish, { once: true });
        ws.on("unexpected-response", (_q, res) => {
          stop.removeEventListener("abort", finish);
          ws.terminate();
          const status = res.statusCode ?? 0;
          if (status === 200 || status === 501) {
            outcome = "unsupported";
            return resolve();
          }
          const retryable = status === 429 || status === 503;
          reject(new FredError("ERR_TENANT_API", `log stream refused: HTTP ${status}`, { retryable }));
        });
        ws.on("error", (err) => reject(new FredError("ERR_TENANT_API", err.message, { retryable: true })));
        ws.on("close", (code) => {
          stop.removeEventListener("abort", finish);
          if (stop.aborted) return resolve();
          if (code === LEASE_ENDED) {
            outcome = "ended";
            return resolve();
          }
          reject(new FredError("ERR_TENANT_API", `log stream closed (${code})`, { retryable: true }));
        });
        ws.on("message", (data) => {
          const text = String(data);
          if (mode === "json") process.stdout.write(`${text}\n`);
          else for (const line of frameLines(JSON.parse(text) as Record<string, unknown>)) printText(line);
        });
      }),
    { clock: commandClock, backoff: { initialMs: 500, maxMs: 10_000 }, signal: stop },
  ).catch((err: unknown) => {
    if (!stop.aborted) throw err;
  });
  if (outcome === "ended") say(`fred: lease ${uuid}: its workload is gone; the log stream ended`);
  return outcome;
}
