import pino, { type Logger } from "pino";

/**
 * Structured JSON logs on stderr: stdout is reserved for each command's machine-readable
 * output. The level comes from FRED_LOG_LEVEL (default info).
 */
export function createLogger(name: string, level = process.env.FRED_LOG_LEVEL ?? "info"): Logger {
  return pino({ name, level, base: { name } }, pino.destination({ fd: 2, sync: true }));
}

export type { Logger };
