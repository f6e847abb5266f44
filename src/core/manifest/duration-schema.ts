import { z } from "zod";
import { parseGoDuration } from "../duration.ts";

/**
 * A manifest duration: Go `time.ParseDuration` text ("30s", "1m30s", "1.5h", "0") or an
 * integer number of nanoseconds. Parsed to nanoseconds. Values must stay exact as a JS
 * number (below 2^53 ns, about 104 days), far above any sensible health or stop timing.
 */
const GO_DURATION_PATTERN = /^[+-]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$/;

const DURATION_HINT = 'a Go duration string such as "30s" or "1m30s", or an integer number of nanoseconds';

export const durationSchema = z
  .union(
    [
      z.string().regex(GO_DURATION_PATTERN, { error: `must be ${DURATION_HINT}` }),
      z.int({ error: `must be ${DURATION_HINT}` }),
    ],
    { error: `must be ${DURATION_HINT}` },
  )
  .transform((value, ctx): number => {
    const ns = typeof value === "number" ? value : parseGoDuration(value);
    if (!Number.isSafeInteger(ns)) {
      ctx.issues.push({ code: "custom", message: "duration is too large", input: value });
      return z.NEVER;
    }
    return ns;
  })
  .meta({ id: "Duration", description: `Duration: ${DURATION_HINT}.` });
