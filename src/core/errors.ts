import { defaultRetryable, type ErrorCode } from "./error-codes.ts";

export type { ErrorCode } from "./error-codes.ts";

/**
 * One flat family of errors with stable codes. Each error says where it is created
 * whether retrying could help; HTTP mapping happens at exactly one edge per server.
 * `Code` is one of the documented codes (src/core/error-codes.ts), so a misspelt code
 * fails typecheck; retryability defaults to the table's fixed answer for the code.
 */
export class FredError<Code extends ErrorCode = ErrorCode> extends Error {
  readonly code: Code;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: Code,
    message: string,
    opts: { retryable?: boolean; cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "FredError";
    this.code = code;
    this.retryable = opts.retryable ?? defaultRetryable(code);
    this.details = opts.details;
  }
}

export function isFredError<Code extends ErrorCode = ErrorCode>(
  err: unknown,
  code?: Code,
): err is FredError<Code> {
  return err instanceof FredError && (code === undefined || err.code === code);
}
