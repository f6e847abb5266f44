import { withDeadline } from "../../core/async/index.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../log.ts";
import { substrateTimeout } from "./errors.ts";
import type { CapturedLogs } from "./journal/diagnostics.ts";
import type { Substrate } from "./substrate.ts";

/**
 * Persisted failure diagnostics, the capture side: before a failed lease's workload is
 * removed, its containers' logs are read through the substrate's ordinary log reader and
 * bounded, so that what a tenant can read after the workload is gone is small and fixed
 * in size. What is kept is the tenant's own output; why a capture failed (engine text)
 * goes to the operator's log only.
 */

/** Lines kept per instance. */
export const DIAGNOSTIC_LOG_LINES = 100;
/** Bytes kept per instance (its newest bytes). */
export const DIAGNOSTIC_LOG_BYTES = 64 * 1024;
/** Bytes kept per lease, all instances together (instances in key order). */
export const DIAGNOSTIC_LEASE_BYTES = 1024 * 1024;
/** How long one capture may take before the removal goes ahead without it. */
export const DIAGNOSTIC_CAPTURE_TIMEOUT_MS = 15_000;
/** Default `diagnostics_max_age`: a week. */
export const DEFAULT_DIAGNOSTICS_MAX_AGE_MS = 168 * 3_600_000;

/**
 * The recording time before which a failure counts as expired, or undefined when
 * `diagnostics_max_age` is 0: as in the reference's DiagnosticsStore, 0 means a failure
 * never expires (each record stays bounded in size; only a later success or a new
 * failure of the same lease replaces it).
 */
export function diagnosticsCutoffMs(nowMs: number, maxAgeMs: number): number | undefined {
  return maxAgeMs === 0 ? undefined : nowMs - maxAgeMs;
}

export const CUT_MARKER = "[fred: earlier output not kept]\n";
export const DROPPED_MARKER = "[fred: not kept, the lease's diagnostic log budget is spent]\n";

/** The newest `maxBytes` of `text`, starting on a character boundary. */
function newestBytes(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, "utf8");
  if (buf.length <= maxBytes) return text;
  let start = buf.length - maxBytes;
  while (start < buf.length && ((buf[start] as number) & 0xc0) === 0x80) start++;
  return buf.subarray(start).toString("utf8");
}

function lastLines(text: string, n: number): string {
  const trailing = text.endsWith("\n");
  const lines = (trailing ? text.slice(0, -1) : text).split("\n");
  if (lines.length <= n) return text;
  return `${lines.slice(-n).join("\n")}${trailing ? "\n" : ""}`;
}

/** Bounds captured logs: per instance (lines, then bytes) and per lease; entries in key order. */
export function boundDiagnosticLogs(logs: Readonly<Record<string, string>>): CapturedLogs {
  const out: CapturedLogs = {};
  let left = DIAGNOSTIC_LEASE_BYTES;
  for (const key of Object.keys(logs).sort()) {
    const raw = logs[key] ?? "";
    if (left <= 0) {
      out[key] = DROPPED_MARKER;
      continue;
    }
    const byLines = lastLines(raw, DIAGNOSTIC_LOG_LINES);
    const budget = Math.min(DIAGNOSTIC_LOG_BYTES, left);
    let text = newestBytes(byLines, budget);
    if (text !== byLines) text = `${CUT_MARKER}${newestBytes(byLines, budget - CUT_MARKER.length)}`;
    out[key] = text;
    left -= Buffer.byteLength(text);
  }
  return out;
}

/** Where a rolled-back update's logs are served beside the live ones (`failed/<service>/<instance>`). */
export const FAILED_LOG_PREFIX = "failed/";

/**
 * The failed attempt's entries of a diagnostic (those under FAILED_LOG_PREFIX), tailed;
 * empty when there are none. They stay until a later deployment drops the diagnostic.
 */
export function failedAttemptEntries(logs: Readonly<CapturedLogs> | undefined, tail: number): CapturedLogs {
  const failed = Object.entries(logs ?? {}).filter(([k]) => k.startsWith(FAILED_LOG_PREFIX));
  return tailDiagnosticLogs(Object.fromEntries(failed), tail);
}

/** Serves captured logs for `?tail=N`: at most the last N lines of each entry. */
export function tailDiagnosticLogs(logs: Readonly<CapturedLogs>, tail: number): CapturedLogs {
  const out: CapturedLogs = {};
  for (const [key, text] of Object.entries(logs)) out[key] = tail === 0 ? "" : lastLines(text, tail);
  return out;
}

/**
 * Reads and bounds the lease's logs now. Undefined when they cannot be read (the reason
 * is logged): the failure is still recorded, only without logs.
 */
export async function captureLogs(
  substrate: Substrate,
  leaseUuid: string,
  signal: AbortSignal,
  log: Logger,
  clock: Clock,
): Promise<CapturedLogs | undefined> {
  if (signal.aborted) return undefined;
  const timedOut = () => substrateTimeout("failure log capture", DIAGNOSTIC_CAPTURE_TIMEOUT_MS);
  try {
    const logs = await withDeadline(clock, DIAGNOSTIC_CAPTURE_TIMEOUT_MS, signal, timedOut, (s) =>
      substrate.logs(leaseUuid, DIAGNOSTIC_LOG_LINES, s),
    );
    return boundDiagnosticLogs(logs);
  } catch (err) {
    log.warn({ lease_uuid: leaseUuid, err }, "failure logs could not be captured");
    return undefined;
  }
}
