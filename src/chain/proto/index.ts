/**
 * Public surface of our chain codecs: liftedinit.billing.v1 and liftedinit.sku.v1 messages,
 * queries and state types, plus registry and amino helpers for cosmjs:
 *
 *   const registry = new Registry([...defaultRegistryTypes, ...billingRegistryTypes]);
 *   const aminoTypes = new AminoTypes({ ...createDefaultAminoConverters(), ...billingAminoConverters });
 */
import type { GeneratedType } from "@cosmjs/proto-signing";
import { aminoConvertersFor } from "./amino.ts";
import { billingMsgResponses, billingMsgs } from "./billing-tx.ts";
import type { MessageCodec } from "./codec.ts";
import { skuMsgResponses, skuMsgs } from "./sku.ts";

export { aminoTypeOf } from "./amino.ts";
export * from "./billing-query.ts";
export * from "./billing-tx.ts";
export * from "./billing-types.ts";
export { type DeepPartial, type MessageCodec, toBytes } from "./codec.ts";
export * from "./cosmos.ts";
export * from "./sku.ts";

const allMsgs = [...billingMsgs, ...skuMsgs] as unknown as readonly MessageCodec<unknown>[];

/** [typeUrl, codec] pairs for every billing and sku Msg and Msg response. */
export const billingRegistryTypes: ReadonlyArray<[string, GeneratedType]> = [
  ...billingMsgs,
  ...billingMsgResponses,
  ...skuMsgs,
  ...skuMsgResponses,
].map((codec) => [codec.typeUrl, codec as unknown as GeneratedType]);

/** Amino converters for every billing and sku Msg, keyed by type URL. */
export const billingAminoConverters = aminoConvertersFor(allMsgs);
