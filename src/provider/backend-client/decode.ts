import type { z } from "zod";
import { parseStrictJson } from "../../core/encoding.ts";
import { FredError } from "../../core/errors.ts";

/**
 * Reads a backend response body with one of the contract's schemas
 * (`src/core/backend-contract`). A body off the contract's shape is ERR_BACKEND_MALFORMED:
 * never guessed at, never half-used.
 */
export function decodeBody<S extends z.ZodType>(
  schema: S,
  body: Buffer,
  max: number,
  backend: string,
  what: string,
): z.output<S> {
  let value: unknown;
  try {
    value = parseStrictJson(body, max);
  } catch {
    throw malformed(backend, what);
  }
  const result = schema.safeParse(value);
  if (!result.success) throw malformed(backend, what);
  return result.data;
}

function malformed(backend: string, what: string): FredError {
  return new FredError("ERR_BACKEND_MALFORMED", `backend ${backend}: malformed ${what} response`, {
    retryable: true,
  });
}
