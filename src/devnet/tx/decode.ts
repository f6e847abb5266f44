/**
 * TxRaw → the parts the ante handler and the router need, failing the way the SDK's tx
 * decoder does (code 2, "tx parse error") for malformed protobuf or unknown message types.
 */
import { AuthInfo, TxBody, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { sdkErrors } from "../errors.ts";
import type { MsgHandler } from "../module.ts";

export interface DecodedMsg {
  any: Any;
  handler: MsgHandler<unknown>;
  msg: unknown;
}

export interface DecodedTx {
  bytes: Uint8Array;
  raw: TxRaw;
  body: TxBody;
  authInfo: AuthInfo;
  msgs: DecodedMsg[];
  /** Unique signers of all messages, in order of first appearance. */
  signers: string[];
}

export type HandlerLookup = (typeUrl: string) => MsgHandler<unknown> | undefined;

function parse<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw sdkErrors.txDecode.wrap(
      `failed to decode ${what}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

export function decodeTx(bytes: Uint8Array, lookup: HandlerLookup): DecodedTx {
  if (bytes.length === 0) throw sdkErrors.txDecode.wrap("tx bytes are empty");
  const raw = parse("TxRaw", () => TxRaw.decode(bytes));
  const body = parse("TxBody", () => TxBody.decode(raw.bodyBytes));
  const authInfo = parse("AuthInfo", () => AuthInfo.decode(raw.authInfoBytes));
  const msgs: DecodedMsg[] = [];
  for (const any of body.messages) {
    const handler = lookup(any.typeUrl);
    if (!handler) throw sdkErrors.txDecode.wrap(`unable to resolve type URL ${any.typeUrl}`);
    msgs.push({ any, handler, msg: parse(any.typeUrl, () => handler.decode(any.value)) });
  }
  const signers: string[] = [];
  for (const m of msgs) {
    for (const s of m.handler.signers(m.msg)) if (!signers.includes(s)) signers.push(s);
  }
  return { bytes, raw, body, authInfo, msgs, signers };
}
