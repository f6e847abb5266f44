/** Our billing and sku codecs in the shapes cosmjs takes: Registry entries and amino converters. */
import type { GeneratedType } from "@cosmjs/proto-signing";
import { aminoConvertersFor } from "./amino.ts";
import { billingMsgResponses, billingMsgs } from "./billing-tx.ts";
import type { MessageCodec } from "./codec.ts";
import { skuMsgResponses, skuMsgs } from "./sku.ts";

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
