/**
 * SDK-shaped chain errors. A registered error is (codespace, code, description); wrapping it
 * prefixes context the way the SDK's errorsmod.Wrap does, so the ABCI `log` reads
 * "<context>: <description>" and keeps the registered code and codespace.
 */
export class ChainError extends Error {
  readonly codespace: string;
  readonly abciCode: number;
  /** The text a client sees in `log`. */
  readonly log: string;

  constructor(codespace: string, abciCode: number, log: string) {
    super(log);
    this.name = "ChainError";
    this.codespace = codespace;
    this.abciCode = abciCode;
    this.log = log;
  }
}

export interface RegisteredError {
  readonly codespace: string;
  readonly code: number;
  readonly description: string;
  /** The bare error: log = description. */
  error(): ChainError;
  /** log = `${context}: ${description}`. */
  wrap(context: string): ChainError;
  /** True when `err` carries this error's codespace and code. */
  is(err: unknown): boolean;
}

export function defineError(codespace: string, code: number, description: string): RegisteredError {
  return {
    codespace,
    code,
    description,
    error: () => new ChainError(codespace, code, description),
    wrap: (context) => new ChainError(codespace, code, `${context}: ${description}`),
    is: (err) => err instanceof ChainError && err.codespace === codespace && err.abciCode === code,
  };
}

export function isChainError(err: unknown): err is ChainError {
  return err instanceof ChainError;
}

/** The Cosmos SDK v0.50 `types/errors` registry entries the devnet uses (codespace "sdk"). */
export const sdkErrors = {
  txDecode: defineError("sdk", 2, "tx parse error"),
  invalidSequence: defineError("sdk", 3, "invalid sequence"),
  unauthorized: defineError("sdk", 4, "unauthorized"),
  insufficientFunds: defineError("sdk", 5, "insufficient funds"),
  unknownRequest: defineError("sdk", 6, "unknown request"),
  invalidAddress: defineError("sdk", 7, "invalid address"),
  invalidPubKey: defineError("sdk", 8, "invalid pubkey"),
  unknownAddress: defineError("sdk", 9, "unknown address"),
  invalidCoins: defineError("sdk", 10, "invalid coins"),
  outOfGas: defineError("sdk", 11, "out of gas"),
  memoTooLarge: defineError("sdk", 12, "memo too large"),
  insufficientFee: defineError("sdk", 13, "insufficient fee"),
  tooManySignatures: defineError("sdk", 14, "maximum number of signatures exceeded"),
  noSignatures: defineError("sdk", 15, "no signatures supplied"),
  invalidRequest: defineError("sdk", 18, "invalid request"),
  txInMempool: defineError("sdk", 19, "tx already in mempool"),
  mempoolFull: defineError("sdk", 20, "mempool is full"),
  txTooLarge: defineError("sdk", 21, "tx too large"),
  keyNotFound: defineError("sdk", 22, "key not found"),
  wrongPassword: defineError("sdk", 23, "invalid account password"),
  invalidChainId: defineError("sdk", 28, "invalid chain-id"),
  invalidType: defineError("sdk", 29, "invalid type"),
  txTimeoutHeight: defineError("sdk", 30, "tx timeout height"),
  unknownExtensionOptions: defineError("sdk", 31, "unknown extension options"),
  wrongSequence: defineError("sdk", 32, "incorrect account sequence"),
  notSupported: defineError("sdk", 37, "feature not supported"),
  notFound: defineError("sdk", 38, "not found"),
  invalidGasLimit: defineError("sdk", 41, "invalid gas limit"),
} as const;

/** What the SDK reports for a panic or any non-registered error: code 1, codespace "undefined". */
export function internalError(err: unknown): ChainError {
  const text = err instanceof Error ? err.message : String(err);
  return new ChainError("undefined", 1, `internal: ${text}`);
}
