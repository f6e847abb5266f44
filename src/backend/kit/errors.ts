import { type BackendErrorBody, backendError, type ValidationCode } from "../../core/envelope.ts";
import type { BackendBodyCode } from "../../core/error-codes.ts";
import { FredError } from "../../core/errors.ts";

/**
 * A refusal the contract server answers with a documented status and envelope. Created
 * where the decision is made; mapped to HTTP in exactly one place (the server's error
 * handler). Messages are tenant-safe by construction.
 */
export type ContractStatus = 400 | 403 | 404 | 409 | 422 | 501 | 503;

export class ContractError extends FredError<`ERR_CONTRACT_${ContractStatus}`> {
  readonly status: ContractStatus;
  readonly body: BackendErrorBody;

  constructor(
    status: ContractStatus,
    message: string,
    extra: { code?: BackendBodyCode; validation_code?: ValidationCode } = {},
  ) {
    super(`ERR_CONTRACT_${status}`, message, { retryable: status === 503 });
    this.name = "ContractError";
    this.status = status;
    this.body = backendError(message, extra);
  }
}

/**
 * A request body the contract's readers refused (src/core/backend-contract), or a request
 * admission cannot take: a 400 at the HTTP edge, with a message safe to show the caller.
 */
export class WireError extends FredError<"ERR_WIRE"> {
  constructor(
    message: string,
    readonly validationCode?: "unknown_sku" | "invalid_manifest" | "image_not_allowed",
  ) {
    super("ERR_WIRE", message);
    this.name = "WireError";
  }
}

export const badRequest = (message: string, validation_code?: ValidationCode) =>
  new ContractError(400, message, validation_code === undefined ? {} : { validation_code });
export const notFound = (message = "lease is not provisioned") => new ContractError(404, message);
export const conflict = (message: string, code?: BackendBodyCode) =>
  new ContractError(409, message, code === undefined ? {} : { code });
export const insufficientResources = (message: string) =>
  new ContractError(503, message, { code: "insufficient_resources" });
/** 422 without a code: no retained data for the restore's source (also: no retention here). */
export const notRetained = () => new ContractError(422, "no retained data for the source lease");
export const demoteExceedsTier = (detail: string) =>
  new ContractError(422, `retained data exceeds the requested smaller tier: ${detail}`, {
    code: "demote_exceeds_tier",
  });
export const unsupported = (op: string) =>
  new ContractError(501, `${op} is not supported by this backend yet`, { code: "unsupported" });
export const storageMismatch = () =>
  new ContractError(409, "request names another backend storage identity", {
    code: "storage_identity_mismatch",
  });

/**
 * A substrate call the backend waited on past its budget (a route's read, a failure's log
 * capture). Not a refusal: a route answers it as any substrate failure, a bare 500.
 */
export const substrateTimeout = (what: string, ms: number) =>
  new FredError("ERR_SUBSTRATE_TIMEOUT", `substrate ${what}: no answer within ${ms} ms`, { retryable: true });
