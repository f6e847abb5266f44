/**
 * liftedinit.sku.v1: providers and SKUs (types, Msgs, queries, genesis). Field numbers follow
 * the x/sku field tables; the matching .proto text lives in ./liftedinit/sku/v1/.
 */
import { f, message } from "./codec.ts";
import { Coin, PageRequest, PageResponse } from "./cosmos.ts";

const P = "/liftedinit.sku.v1.";
type Of<C extends { decode: (...a: never[]) => unknown }> = ReturnType<C["decode"]>;

export const Unit = { UNIT_UNSPECIFIED: 0, UNIT_PER_HOUR: 1, UNIT_PER_DAY: 2 } as const;
export type Unit = (typeof Unit)[keyof typeof Unit];

export const SkuParams = message(`${P}Params`, { allowedList: f.repeatedString(1) });
export type SkuParams = Of<typeof SkuParams>;

export const Provider = message(`${P}Provider`, {
  uuid: f.string(1),
  address: f.string(2),
  payoutAddress: f.string(3),
  metaHash: f.bytes(4),
  active: f.bool(5),
  apiUrl: f.string(6),
});
export type Provider = Of<typeof Provider>;

export const SKU = message(`${P}SKU`, {
  uuid: f.string(1),
  providerUuid: f.string(2),
  name: f.string(3),
  unit: f.enum(4),
  basePrice: f.message(5, Coin),
  metaHash: f.bytes(6),
  active: f.bool(7),
});
export type SKU = Of<typeof SKU>;

export const SkuGenesisState = message(`${P}GenesisState`, {
  params: f.message(1, SkuParams),
  providers: f.repeatedMessage(2, Provider),
  skus: f.repeatedMessage(3, SKU),
  providerSequence: f.uint64(4),
  skuSequence: f.uint64(5),
});
export type SkuGenesisState = Of<typeof SkuGenesisState>;

// ---- Msgs ----
export const MsgCreateProvider = message(`${P}MsgCreateProvider`, {
  authority: f.string(1),
  address: f.string(2),
  payoutAddress: f.string(3),
  metaHash: f.bytes(4),
  apiUrl: f.string(5),
});
export type MsgCreateProvider = Of<typeof MsgCreateProvider>;
export const MsgCreateProviderResponse = message(`${P}MsgCreateProviderResponse`, { uuid: f.string(1) });

export const MsgUpdateProvider = message(`${P}MsgUpdateProvider`, {
  authority: f.string(1),
  uuid: f.string(2),
  address: f.string(3),
  payoutAddress: f.string(4),
  metaHash: f.bytes(5),
  active: f.bool(6),
  apiUrl: f.string(7),
});
export type MsgUpdateProvider = Of<typeof MsgUpdateProvider>;
export const MsgUpdateProviderResponse = message(`${P}MsgUpdateProviderResponse`, {});

export const MsgDeactivateProvider = message(`${P}MsgDeactivateProvider`, {
  authority: f.string(1),
  uuid: f.string(2),
  limit: f.uint64(3),
});
export type MsgDeactivateProvider = Of<typeof MsgDeactivateProvider>;
export const MsgDeactivateProviderResponse = message(`${P}MsgDeactivateProviderResponse`, {
  deactivatedSkuCount: f.uint64(1),
  hasMore: f.bool(2),
});

export const MsgCreateSKU = message(`${P}MsgCreateSKU`, {
  authority: f.string(1),
  providerUuid: f.string(2),
  name: f.string(3),
  unit: f.enum(4),
  basePrice: f.message(5, Coin, { required: true }),
  metaHash: f.bytes(6),
});
export type MsgCreateSKU = Of<typeof MsgCreateSKU>;
export const MsgCreateSKUResponse = message(`${P}MsgCreateSKUResponse`, { uuid: f.string(1) });

export const MsgUpdateSKU = message(`${P}MsgUpdateSKU`, {
  authority: f.string(1),
  uuid: f.string(2),
  providerUuid: f.string(3),
  name: f.string(4),
  unit: f.enum(5),
  basePrice: f.message(6, Coin, { required: true }),
  metaHash: f.bytes(7),
  active: f.bool(8),
});
export type MsgUpdateSKU = Of<typeof MsgUpdateSKU>;
export const MsgUpdateSKUResponse = message(`${P}MsgUpdateSKUResponse`, {});

export const MsgDeactivateSKU = message(`${P}MsgDeactivateSKU`, {
  authority: f.string(1),
  uuid: f.string(2),
});
export type MsgDeactivateSKU = Of<typeof MsgDeactivateSKU>;
export const MsgDeactivateSKUResponse = message(`${P}MsgDeactivateSKUResponse`, {});

export const SkuMsgUpdateParams = message(`${P}MsgUpdateParams`, {
  authority: f.string(1),
  params: f.message(2, SkuParams, { required: true }),
});
export type SkuMsgUpdateParams = Of<typeof SkuMsgUpdateParams>;
export const SkuMsgUpdateParamsResponse = message(`${P}MsgUpdateParamsResponse`, {});

// ---- Queries (path /liftedinit.sku.v1.Query/<Method>) ----
export const SkuQueryParamsRequest = message(`${P}QueryParamsRequest`, {});
export const SkuQueryParamsResponse = message(`${P}QueryParamsResponse`, { params: f.message(1, SkuParams) });
export const QueryProviderRequest = message(`${P}QueryProviderRequest`, { uuid: f.string(1) });
export const QueryProviderResponse = message(`${P}QueryProviderResponse`, {
  provider: f.message(1, Provider),
});
export const QueryProvidersRequest = message(`${P}QueryProvidersRequest`, {
  pagination: f.message(1, PageRequest),
  activeOnly: f.bool(2),
});
export const QueryProvidersResponse = message(`${P}QueryProvidersResponse`, {
  providers: f.repeatedMessage(1, Provider),
  pagination: f.message(2, PageResponse),
});
export const QuerySKURequest = message(`${P}QuerySKURequest`, { uuid: f.string(1) });
export const QuerySKUResponse = message(`${P}QuerySKUResponse`, { sku: f.message(1, SKU) });
export const QuerySKUsRequest = message(`${P}QuerySKUsRequest`, {
  pagination: f.message(1, PageRequest),
  activeOnly: f.bool(2),
});
export const QuerySKUsResponse = message(`${P}QuerySKUsResponse`, {
  skus: f.repeatedMessage(1, SKU),
  pagination: f.message(2, PageResponse),
});
export const QuerySKUsByProviderRequest = message(`${P}QuerySKUsByProviderRequest`, {
  providerUuid: f.string(1),
  pagination: f.message(2, PageRequest),
  activeOnly: f.bool(3),
});
export const QuerySKUsByProviderResponse = message(`${P}QuerySKUsByProviderResponse`, {
  skus: f.repeatedMessage(1, SKU),
  pagination: f.message(2, PageResponse),
});
export const QueryProviderByAddressRequest = message(`${P}QueryProviderByAddressRequest`, {
  address: f.string(1),
  pagination: f.message(2, PageRequest),
  activeOnly: f.bool(3),
});
export const QueryProviderByAddressResponse = message(`${P}QueryProviderByAddressResponse`, {
  providers: f.repeatedMessage(1, Provider),
  pagination: f.message(2, PageResponse),
});

/** Every sku Msg, for registries and amino converters. */
export const skuMsgs = [
  MsgCreateProvider,
  MsgUpdateProvider,
  MsgDeactivateProvider,
  MsgCreateSKU,
  MsgUpdateSKU,
  MsgDeactivateSKU,
  SkuMsgUpdateParams,
] as const;

export const skuMsgResponses = [
  MsgCreateProviderResponse,
  MsgUpdateProviderResponse,
  MsgDeactivateProviderResponse,
  MsgCreateSKUResponse,
  MsgUpdateSKUResponse,
  MsgDeactivateSKUResponse,
  SkuMsgUpdateParamsResponse,
] as const;
