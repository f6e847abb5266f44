/**
 * The messages of a transaction as the chain reads them (each an `Any`), for what Fred
 * itself sends: x/billing and x/sku, and the authz and bank messages of sub-signers
 * (MsgExec, MsgGrant, MsgRevoke, MsgSend). These codecs are loaded anyway; cosmjs's
 * Registry with the SDK's default types (chain/amino-signing.ts) pulls in @cosmjs/stargate and
 * every module it knows (staking, gov, IBC, …), several MB that providerd would keep for
 * its whole life to encode none of them. It is loaded only when a transaction carries a
 * message outside this table (a tool sending some other SDK message).
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import { MsgExec, MsgGrant, MsgRevoke } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { billingRegistryTypes } from "../proto/index.ts";

/** Turns a message into the `Any` a TxBody carries; cosmjs's Registry is one. */
export interface MessageEncoder {
  encodeAsAny(message: EncodeObject): Any;
}

interface Codec {
  fromPartial(value: never): unknown;
  encode(message: never): { finish(): Uint8Array };
}

const CODECS = new Map<string, Codec>([
  ...(billingRegistryTypes as ReadonlyArray<[string, unknown]> as ReadonlyArray<[string, Codec]>),
  [MsgExec.typeUrl, MsgExec],
  [MsgGrant.typeUrl, MsgGrant],
  [MsgRevoke.typeUrl, MsgRevoke],
  [MsgSend.typeUrl, MsgSend],
]);

/** Encodes the messages of the table above as cosmjs's Registry does (fromPartial, then encode). */
export const txMessages: MessageEncoder = {
  encodeAsAny(message) {
    const codec = CODECS.get(message.typeUrl);
    if (codec === undefined) throw new Error(`no codec for ${message.typeUrl} in the transaction table`);
    const value = codec.encode(codec.fromPartial(message.value as never) as never).finish();
    return { typeUrl: message.typeUrl, value };
  },
};

let fullRegistry: Promise<MessageEncoder> | undefined;

/** An encoder for `messages`: the table above when it covers them, else cosmjs's full registry. */
export async function messageEncoderFor(messages: readonly EncodeObject[]): Promise<MessageEncoder> {
  if (messages.every((m) => CODECS.has(m.typeUrl))) return txMessages;
  fullRegistry ??= import("../amino-signing.ts").then((m) => m.chainRegistry());
  return fullRegistry;
}
