/**
 * Errors as the SDK's gRPC-gateway writes them: `{"code": <gRPC code>, "message": …,
 * "details": []}` with the HTTP status grpc-gateway maps the code to. A query handler's
 * failure arrives as an ABCI result (code, codespace, log); the gateway in front of a real
 * node sees the gRPC status the handler returned, which is what this recovers.
 */

/** gRPC status codes (google.rpc.Code). */
export const GrpcCode = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
export type GrpcCodeName = keyof typeof GrpcCode;

/** grpc-gateway's HTTPStatusFromCode. */
const HTTP_STATUS: Record<number, number> = {
  0: 200,
  1: 408,
  2: 500,
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  11: 400,
  12: 501,
  13: 500,
  14: 503,
  15: 500,
  16: 401,
};

export class RestError extends Error {
  readonly code: number;
  constructor(code: GrpcCodeName, message: string) {
    super(message);
    this.code = GrpcCode[code];
  }

  get httpStatus(): number {
    return HTTP_STATUS[this.code] ?? 500;
  }

  get body(): { code: number; message: string; details: [] } {
    return { code: this.code, message: this.message, details: [] };
  }
}

/**
 * The SDK's registered root errors carry a gRPC code of their own (a wrapped one keeps its
 * cause's): invalid request → InvalidArgument, unauthorized → Unauthenticated, key not found
 * and not found → NotFound; anything else is Unknown.
 */
const SDK_GRPC: Record<number, GrpcCodeName> = {
  4: "Unauthenticated",
  18: "InvalidArgument",
  22: "NotFound",
  38: "NotFound",
};

const GRPC_TEXT = /^rpc error: code = (\w+) desc = ([\s\S]*): [a-z ]+$/;

/** A failed ABCI query result as the gateway reports the gRPC error behind it. */
export function queryFailure(r: { code: number; codespace: string; log: string }): RestError {
  // query-kit's grpcError writes "rpc error: code = X desc = Y: <registered error>".
  const m = GRPC_TEXT.exec(r.log);
  if (m && m[1]! in GrpcCode) return new RestError(m[1] as GrpcCodeName, m[2]!);
  const name = r.codespace === "sdk" ? SDK_GRPC[r.code] : undefined;
  return new RestError(name ?? "Unknown", r.log);
}
