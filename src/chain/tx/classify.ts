/**
 * What a failed broadcast or delivery means for the next step. CheckTx failures come back
 * from broadcast_tx_sync as (code, codespace, log); mempool refusals as JSON-RPC errors;
 * delivery failures as the included tx's code. Texts follow Cosmos SDK v0.50.
 */

export type TxFailure =
  | { kind: "sequence"; expected: number | undefined }
  | { kind: "out_of_gas" }
  | { kind: "insufficient_fee" }
  | { kind: "in_mempool" }
  | { kind: "lease"; code: number }
  | { kind: "transient" }
  | { kind: "terminal" };

/** Billing codes that concern a lease's state, so a batch can be re-planned per lease. */
export const LEASE_STATE_CODES = new Set([2, 3, 14, 22, 34, 35]);

const SEQUENCE = /account sequence mismatch, expected (\d+), got (\d+)/;

export function classifyCode(code: number, codespace: string, log: string): TxFailure {
  if (codespace === "sdk" || codespace === "") {
    if (code === 32) {
      const m = SEQUENCE.exec(log);
      return { kind: "sequence", expected: m ? Number(m[1]) : undefined };
    }
    if (code === 11) return { kind: "out_of_gas" };
    if (code === 13) return { kind: "insufficient_fee" };
    if (code === 19) return { kind: "in_mempool" };
  }
  if (codespace === "billing" && LEASE_STATE_CODES.has(code)) return { kind: "lease", code };
  return { kind: "terminal" };
}

/** JSON-RPC / transport errors around broadcasting. */
export function classifyRpcError(err: unknown): TxFailure {
  const text = err instanceof Error ? err.message : String(err);
  if (/tx already exists in cache/i.test(text)) return { kind: "in_mempool" };
  if (SEQUENCE.test(text)) {
    const m = SEQUENCE.exec(text);
    return { kind: "sequence", expected: m ? Number(m[1]) : undefined };
  }
  return { kind: "transient" };
}

/** Expected sequence from a log, if the text says so. */
export function expectedSequence(log: string): number | undefined {
  const m = SEQUENCE.exec(log);
  return m ? Number(m[1]) : undefined;
}
