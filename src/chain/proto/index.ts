/**
 * Public surface of our chain codecs: liftedinit.billing.v1 and liftedinit.sku.v1 messages,
 * queries and state types, plus registry and amino helpers for cosmjs:
 *
 *   const registry = chainRegistry();            // SDK default types + ours
 *   const aminoTypes = chainAminoTypes(registry); // amino signers (Keplr, Ledger) need these
 */
export { aminoTypeOf } from "./amino.ts";
export * from "./billing-query.ts";
export * from "./billing-tx.ts";
export * from "./billing-types.ts";
export {
  type DeepPartial,
  type FieldSpec,
  type MessageCodec,
  toBytes,
  toBytesWithEncoded,
} from "./codec.ts";
export * from "./cosmos.ts";
export { billingAminoConverters, billingRegistryTypes } from "./registry.ts";
export { type AminoSignInput, aminoSignBytes, chainAminoTypes, chainRegistry } from "./signing.ts";
export * from "./sku.ts";
