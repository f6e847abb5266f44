/**
 * x/sku Msg handlers. As on the chain, sku Msgs have no ValidateBasic: each handler checks the
 * sender first (authority or params.allowed_list, code 3), then validates fields (re-wrapped
 * as the handler's error), then state.
 */
import {
  type Coin,
  type MessageCodec,
  MsgCreateProvider,
  MsgCreateProviderResponse,
  MsgCreateSKU,
  MsgCreateSKUResponse,
  MsgDeactivateProvider,
  MsgDeactivateProviderResponse,
  MsgDeactivateSKU,
  MsgDeactivateSKUResponse,
  MsgUpdateProvider,
  MsgUpdateProviderResponse,
  MsgUpdateSKU,
  MsgUpdateSKUResponse,
  SkuMsgUpdateParams,
  SkuMsgUpdateParamsResponse,
  toBytes,
} from "../../../chain/proto/index.ts";
import type { RegisteredError } from "../../errors.ts";
import type { ChainEvent, ExecContext, MsgHandler } from "../../module.ts";
import { skuErrors } from "./errors.ts";
import { setSkuParams } from "./keeper.ts";
import type { SkuKeeper } from "./types.ts";
import {
  addressProblem,
  apiUrlProblem,
  MAX_META_HASH,
  MAX_SKU_NAME,
  perSecondPrice,
  stripControl,
} from "./validate.ts";

const DEFAULT_DEACTIVATE_LIMIT = 50n;
const MAX_DEACTIVATE_LIMIT = 100n;

export interface SkuMsgDeps {
  keeper: SkuKeeper;
  authority: string;
  prefix: string;
}

const ev = (type: string, attrs: Record<string, string>): ChainEvent => ({
  type,
  attributes: Object.entries(attrs).map(([key, value]) => ({ key, value })),
});

function handler<T, R>(
  codec: MessageCodec<T>,
  response: MessageCodec<R>,
  execute: (ctx: ExecContext, msg: T) => R,
): MsgHandler<T> {
  return {
    typeUrl: codec.typeUrl,
    responseTypeUrl: response.typeUrl,
    decode: (bytes) => codec.decode(bytes),
    signers: (msg) => [(msg as { authority: string }).authority],
    execute: (ctx, msg) => toBytes(response, execute(ctx, msg)),
  };
}

export function skuMessages({ keeper, authority, prefix }: SkuMsgDeps): MsgHandler<unknown>[] {
  function authorize(ctx: ExecContext, sender: string, authorityOnly = false): void {
    const s = sender.toLowerCase();
    if (s === authority) return;
    if (!authorityOnly && keeper.getParams(ctx).allowedList.some((a) => a.toLowerCase() === s)) return;
    throw skuErrors.unauthorized.wrap(
      `${sender} is not the module authority${authorityOnly ? "" : " or allowed"}`,
    );
  }
  function check(err: RegisteredError, problem: string | undefined): void {
    if (problem !== undefined) throw err.wrap(problem);
  }
  function checkAddress(err: RegisteredError, what: string, address: string): void {
    const p = addressProblem(address, prefix);
    if (p !== undefined) throw err.wrap(`invalid ${what}: ${p}`);
  }
  function checkMeta(err: RegisteredError, hash: Uint8Array): void {
    if (hash.length > MAX_META_HASH) throw err.wrap(`meta_hash longer than ${MAX_META_HASH} bytes`);
  }
  function checkSkuFields(name: string, unit: number, price: Coin | undefined, meta: Uint8Array): void {
    if (name.length === 0 || Buffer.byteLength(name) > MAX_SKU_NAME)
      throw skuErrors.invalidSku.wrap(`name must be 1-${MAX_SKU_NAME} bytes`);
    const p = perSecondPrice(unit, price);
    if ("problem" in p) throw skuErrors.invalidSku.wrap(p.problem);
    checkMeta(skuErrors.invalidSku, meta);
  }

  const createProvider = handler(MsgCreateProvider, MsgCreateProviderResponse, (ctx, msg) => {
    authorize(ctx, msg.authority);
    checkAddress(skuErrors.invalidProvider, "address", msg.address);
    checkAddress(skuErrors.invalidProvider, "payout address", msg.payoutAddress);
    checkMeta(skuErrors.invalidProvider, msg.metaHash);
    check(skuErrors.invalidProvider, apiUrlProblem(msg.apiUrl));
    const p = keeper.addProvider(ctx, {
      address: msg.address.toLowerCase(),
      payoutAddress: msg.payoutAddress.toLowerCase(),
      metaHash: msg.metaHash,
      active: true,
      apiUrl: msg.apiUrl,
    });
    ctx.emit(
      ev("provider_created", {
        provider_uuid: p.uuid,
        address: p.address,
        payout_address: p.payoutAddress,
        created_by: msg.authority.toLowerCase(),
      }),
    );
    return { uuid: p.uuid };
  });

  const updateProvider = handler(MsgUpdateProvider, MsgUpdateProviderResponse, (ctx, msg) => {
    authorize(ctx, msg.authority);
    checkAddress(skuErrors.invalidProvider, "address", msg.address);
    checkAddress(skuErrors.invalidProvider, "payout address", msg.payoutAddress);
    checkMeta(skuErrors.invalidProvider, msg.metaHash);
    check(skuErrors.invalidProvider, apiUrlProblem(msg.apiUrl));
    const prev = keeper.getProvider(ctx, msg.uuid);
    if (prev === undefined) throw skuErrors.providerNotFound.wrap(msg.uuid);
    if (prev.active && !msg.active)
      throw skuErrors.invalidProvider.wrap("use MsgDeactivateProvider to deactivate a provider");
    keeper.putProvider(ctx, {
      uuid: prev.uuid,
      address: msg.address.toLowerCase(),
      payoutAddress: msg.payoutAddress.toLowerCase(),
      metaHash: msg.metaHash,
      active: msg.active,
      apiUrl: msg.apiUrl === "" ? prev.apiUrl : msg.apiUrl,
    });
    if (!prev.active && msg.active) ctx.emit(ev("provider_activated", { provider_uuid: prev.uuid }));
    ctx.emit(ev("provider_updated", { provider_uuid: prev.uuid }));
    return {};
  });

  const deactivateProvider = handler(MsgDeactivateProvider, MsgDeactivateProviderResponse, (ctx, msg) => {
    authorize(ctx, msg.authority);
    if (msg.limit > MAX_DEACTIVATE_LIMIT)
      throw skuErrors.invalidProvider.wrap(`limit above ${MAX_DEACTIVATE_LIMIT}`);
    const limit = Number(msg.limit === 0n ? DEFAULT_DEACTIVATE_LIMIT : msg.limit);
    const prev = keeper.getProvider(ctx, msg.uuid);
    if (prev === undefined) throw skuErrors.providerNotFound.wrap(msg.uuid);
    const by = msg.authority.toLowerCase();
    const skus = keeper.activeSkusOf(ctx, prev.uuid, limit + 1);
    if (!prev.active && skus.length === 0)
      throw skuErrors.invalidProvider.wrap("provider is already inactive and has no active SKUs");
    if (prev.active) {
      keeper.putProvider(ctx, { ...prev, active: false });
      ctx.emit(ev("provider_deactivated", { provider_uuid: prev.uuid, deactivated_by: by }));
    }
    const batch = skus.slice(0, limit);
    for (const sku of batch) {
      keeper.putSku(ctx, { ...sku, active: false });
      ctx.emit(ev("sku_deactivated", { sku_uuid: sku.uuid, provider_uuid: prev.uuid, deactivated_by: by }));
    }
    return { deactivatedSkuCount: BigInt(batch.length), hasMore: skus.length > limit };
  });

  const createSku = handler(MsgCreateSKU, MsgCreateSKUResponse, (ctx, msg) => {
    authorize(ctx, msg.authority);
    checkSkuFields(msg.name, msg.unit, msg.basePrice, msg.metaHash);
    const provider = keeper.getProvider(ctx, msg.providerUuid);
    if (provider === undefined) throw skuErrors.providerNotFound.wrap(msg.providerUuid);
    if (!provider.active) throw skuErrors.invalidProvider.wrap("provider is not active");
    const sku = keeper.addSku(ctx, {
      providerUuid: provider.uuid,
      name: msg.name,
      unit: msg.unit,
      basePrice: msg.basePrice,
      metaHash: msg.metaHash,
      active: true,
    });
    ctx.emit(
      ev("sku_created", {
        sku_uuid: sku.uuid,
        provider_uuid: provider.uuid,
        name: stripControl(sku.name),
        base_price: `${msg.basePrice!.amount}${msg.basePrice!.denom}`,
        created_by: msg.authority.toLowerCase(),
      }),
    );
    return { uuid: sku.uuid };
  });

  const updateSku = handler(MsgUpdateSKU, MsgUpdateSKUResponse, (ctx, msg) => {
    authorize(ctx, msg.authority);
    checkSkuFields(msg.name, msg.unit, msg.basePrice, msg.metaHash);
    const prev = keeper.getSku(ctx, msg.uuid);
    if (prev === undefined) throw skuErrors.skuNotFound.wrap(msg.uuid);
    if (prev.providerUuid !== msg.providerUuid)
      throw skuErrors.invalidSku.wrap("provider_uuid cannot change");
    const provider = keeper.getProvider(ctx, prev.providerUuid);
    if (provider === undefined) throw skuErrors.providerNotFound.wrap(prev.providerUuid);
    if (prev.active && !msg.active)
      throw skuErrors.invalidSku.wrap("use MsgDeactivateSKU to deactivate a SKU");
    const reactivated = !prev.active && msg.active;
    if (reactivated && !provider.active) throw skuErrors.invalidProvider.wrap("provider is not active");
    keeper.putSku(ctx, {
      ...prev,
      name: msg.name,
      unit: msg.unit,
      basePrice: msg.basePrice,
      metaHash: msg.metaHash,
      active: msg.active,
    });
    const ids = { sku_uuid: prev.uuid, provider_uuid: prev.providerUuid };
    if (reactivated) ctx.emit(ev("sku_activated", ids));
    ctx.emit(ev("sku_updated", ids));
    return {};
  });

  const deactivateSku = handler(MsgDeactivateSKU, MsgDeactivateSKUResponse, (ctx, msg) => {
    authorize(ctx, msg.authority);
    const prev = keeper.getSku(ctx, msg.uuid);
    if (prev === undefined) throw skuErrors.skuNotFound.wrap(msg.uuid);
    if (!prev.active) throw skuErrors.invalidSku.wrap("sku is already inactive");
    keeper.putSku(ctx, { ...prev, active: false });
    ctx.emit(
      ev("sku_deactivated", {
        sku_uuid: prev.uuid,
        provider_uuid: prev.providerUuid,
        deactivated_by: msg.authority.toLowerCase(),
      }),
    );
    return {};
  });

  const updateParams = handler(SkuMsgUpdateParams, SkuMsgUpdateParamsResponse, (ctx, msg) => {
    authorize(ctx, msg.authority, true);
    const list = msg.params?.allowedList ?? [];
    const seen = new Set<string>();
    for (const a of list) {
      const p = addressProblem(a, prefix);
      if (p !== undefined) throw skuErrors.invalidConfig.wrap(`allowed_list: ${p}`);
      if (seen.has(a.toLowerCase())) throw skuErrors.invalidConfig.wrap(`allowed_list: duplicate ${a}`);
      seen.add(a.toLowerCase());
    }
    setSkuParams(ctx, { allowedList: list });
    ctx.emit({ type: "params_updated", attributes: [] });
    return {};
  });

  return [
    createProvider,
    updateProvider,
    deactivateProvider,
    createSku,
    updateSku,
    deactivateSku,
    updateParams,
  ] as MsgHandler<unknown>[];
}
