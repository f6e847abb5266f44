/**
 * Public surface of our chain codecs: liftedinit.billing.v1 and liftedinit.sku.v1 messages,
 * queries and state types, plus their registry entries and amino converters for cosmjs.
 * cosmjs's full registry and the amino signing tables are in ../amino-signing.ts, outside
 * this module: they load @cosmjs/stargate and every SDK module it knows, which a daemon
 * signing direct never needs (chain/cosmos/tx-messages.ts loads them on first use).
 *
 *   const registry = chainRegistry();            // SDK default types + ours (../amino-signing.ts)
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
export * from "./sku.ts";
