import { FredError } from "./errors.ts";

/**
 * Go `time.Duration` text ("1m30s", "500ms", "1.5h") — the syntax of our config files
 * and manifests. Values are nanoseconds as a number (exact up to ~104 days).
 */
const UNIT_NS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  μs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

export function parseGoDuration(text: string): number {
  if (typeof text !== "string" || text === "")
    throw new FredError("ERR_DURATION", "duration must be non-empty");
  let i = 0;
  let sign = 1;
  if (text[0] === "-" || text[0] === "+") {
    sign = text[0] === "-" ? -1 : 1;
    i = 1;
  }
  if (text.slice(i) === "0") return 0;
  let total = 0;
  let parts = 0;
  while (i < text.length) {
    PART.lastIndex = i;
    const m = PART.exec(text);
    if (!m) throw new FredError("ERR_DURATION", `invalid duration ${JSON.stringify(text)}`);
    total += Number(m[1]) * (UNIT_NS[m[2] as string] as number);
    i = PART.lastIndex;
    parts++;
  }
  if (parts === 0) throw new FredError("ERR_DURATION", `invalid duration ${JSON.stringify(text)}`);
  return Math.round(sign * total);
}

/** Milliseconds from Go duration text (config files). */
export function parseDurationMs(text: string): number {
  return parseGoDuration(text) / 1e6;
}

export type ConfigDuration = { ok: true; ms: number } | { ok: false; problem: "invalid" | "negative" };

/**
 * The one rule for a duration in configuration (providerd's file and environment, the
 * mock backend's environment, the Docker backend's file): Go syntax, never negative,
 * in milliseconds. Each caller words the problem for its own key.
 */
export function parseConfigDuration(text: string): ConfigDuration {
  let ms: number;
  try {
    ms = parseDurationMs(text);
  } catch {
    return { ok: false, problem: "invalid" };
  }
  return ms < 0 ? { ok: false, problem: "negative" } : { ok: true, ms };
}

function trimFraction(value: number, digits: number): string {
  return value.toFixed(digits).replace(/\.?0+$/, "");
}

/** Formats nanoseconds the way Go's Duration.String does ("1m30s", "1h0m0s", "500ms"). */
export function formatGoDuration(ns: number): string {
  if (ns === 0) return "0s";
  const sign = ns < 0 ? "-" : "";
  const abs = Math.abs(ns);
  if (abs < 1e3) return `${sign}${abs}ns`;
  if (abs < 1e6) return `${sign}${trimFraction(abs / 1e3, 3)}µs`;
  if (abs < 1e9) return `${sign}${trimFraction(abs / 1e6, 6)}ms`;
  const hours = Math.floor(abs / 3600e9);
  const minutes = Math.floor((abs % 3600e9) / 60e9);
  const seconds = trimFraction((abs % 60e9) / 1e9, 9);
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}
