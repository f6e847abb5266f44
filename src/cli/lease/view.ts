import { FredError } from "../../core/errors.ts";
import { printJson, printText } from "../output.ts";

/**
 * How a `fred lease` command shows its answer: `text` is a view for a person (the default
 * when stdout is a terminal), `json` the API's body as one JSON document for scripts (the
 * default when stdout is piped, so scripts see what they always saw). Progress lines for
 * people go to stderr in both modes.
 */
export type OutputMode = "text" | "json";

export const OUTPUT_HELP =
  "text: a readable view (the default on a terminal); json: one JSON document (the default when piped)";

export function outputMode(flags: { output?: string }): OutputMode {
  const given = flags.output;
  if (given === undefined) return process.stdout.isTTY === true ? "text" : "json";
  if (given !== "text" && given !== "json")
    throw new FredError("ERR_USAGE", `--output must be text or json, got ${JSON.stringify(given)}`);
  return given;
}

/** Prints `body` as JSON, or the text lines `view` makes of it. */
export function emit(mode: OutputMode, body: unknown, view: () => readonly string[]): void {
  if (mode === "json") printJson(body);
  else for (const line of view()) printText(line);
}

/** `service/instance | line` for every line of a logs body's `logs` map, in key order. */
export function logLines(logs: unknown, stamp?: string): string[] {
  const out: string[] = [];
  if (typeof logs !== "object" || logs === null) return out;
  for (const [instance, text] of Object.entries(logs as Record<string, unknown>).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    if (typeof text !== "string") continue;
    for (const line of text.split("\n")) if (line !== "") out.push(logLine(instance, line, stamp));
  }
  return out;
}

export function logLine(instance: string, line: string, stamp?: string): string {
  return `${stamp === undefined ? "" : `${stamp} `}${instance} | ${line}`;
}

const shortState = (state: unknown) =>
  String(state ?? "?")
    .replace("LEASE_STATE_", "")
    .toLowerCase();

/** One readable line per event frame: time, kind, status (state), and its detail. */
export function eventLine(frame: Record<string, unknown>): string {
  const time = typeof frame.timestamp === "string" ? frame.timestamp : new Date().toISOString();
  const kind = typeof frame.type === "string" ? frame.type : "status";
  const status = frame.status === undefined ? "" : ` ${String(frame.status)}`;
  const state = frame.state === undefined ? "" : ` (${shortState(frame.state)})`;
  const detail = [frame.reason, frame.error, frame.message].filter((v) => typeof v === "string" && v !== "");
  return `${time} ${kind}${status}${state}${detail.length === 0 ? "" : ` · ${detail.join(" · ")}`}`;
}

/** The status body as a few aligned `key  value` lines. */
export function statusLines(body: Record<string, unknown>): string[] {
  const rows: [string, unknown][] = [
    ["lease", body.lease_uuid],
    ["state", shortState(body.state)],
    ["provision", body.provision_status ?? "not provisioned"],
    ["reason", body.reason],
    ["message", body.message],
    ["failures", body.fail_count],
    ["retained until", body.retained_until],
    ["restore", body.restore_hint],
  ];
  return table(rows.filter(([, v]) => v !== undefined && v !== "").map(([k, v]) => [k, String(v)]));
}

/** Left-aligned columns, two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

/** "3m", "5h", "2d": how long ago `iso` was. */
export function age(iso: unknown, nowMs = Date.now()): string {
  if (typeof iso !== "string") return "-";
  const ms = nowMs - Date.parse(iso);
  if (!Number.isFinite(ms)) return "-";
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}
