/**
 * One flat family of errors with stable codes. Each error says where it is created
 * whether retrying could help; HTTP mapping happens at exactly one edge per server.
 */
export class FredError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: string,
    message: string,
    opts: { retryable?: boolean; cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "FredError";
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.details = opts.details;
  }
}

export function isFredError(err: unknown, code?: string): err is FredError {
  return err instanceof FredError && (code === undefined || err.code === code);
}
