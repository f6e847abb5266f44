/** x/sku gRPC queries (path /liftedinit.sku.v1.Query/<Method>), results in UUID order. */
import {
  Provider,
  QueryProviderByAddressRequest,
  QueryProviderByAddressResponse,
  QueryProviderRequest,
  QueryProviderResponse,
  QueryProvidersRequest,
  QueryProvidersResponse,
  QuerySKURequest,
  QuerySKUResponse,
  QuerySKUsByProviderRequest,
  QuerySKUsByProviderResponse,
  QuerySKUsRequest,
  QuerySKUsResponse,
  SKU,
  SkuQueryParamsResponse,
  toBytes,
} from "../../../chain/proto/index.ts";
import type { QueryContext, QueryHandler } from "../../module.ts";
import { grpcError, paginate, requireNonEmpty } from "../../query-kit.ts";
import { keys } from "./keeper.ts";
import { SKU_MODULE, type SkuKeeper } from "./types.ts";
import { addressProblem } from "./validate.ts";

const Q = "/liftedinit.sku.v1.Query/";

export function skuQueries(keeper: SkuKeeper, prefix: string): Record<string, QueryHandler> {
  const store = (ctx: QueryContext) => ctx.store(SKU_MODULE);
  const providerAt = (ctx: QueryContext) => (uuid: string) => keeper.getProvider(ctx, uuid);
  const skuAt = (ctx: QueryContext) => (uuid: string) => keeper.getSku(ctx, uuid);
  return {
    [`${Q}Params`]: (ctx) => toBytes(SkuQueryParamsResponse, { params: keeper.getParams(ctx) }),
    [`${Q}Provider`](ctx, bytes) {
      const req = QueryProviderRequest.decode(bytes);
      requireNonEmpty(req.uuid, "uuid");
      const provider = keeper.getProvider(ctx, req.uuid);
      if (provider === undefined) throw grpcError("NotFound", `provider ${req.uuid} not found`);
      return toBytes(QueryProviderResponse, { provider });
    },
    [`${Q}Providers`](ctx, bytes) {
      const req = QueryProvidersRequest.decode(bytes);
      const page = req.activeOnly
        ? paginate(store(ctx), keys.providerActive(), req.pagination, providerAt(ctx))
        : paginate(store(ctx), "prov/", req.pagination, (_k, v) => Provider.decode(v));
      return toBytes(QueryProvidersResponse, { providers: page.items, pagination: page.pagination });
    },
    [`${Q}SKU`](ctx, bytes) {
      const req = QuerySKURequest.decode(bytes);
      requireNonEmpty(req.uuid, "uuid");
      const sku = keeper.getSku(ctx, req.uuid);
      if (sku === undefined) throw grpcError("NotFound", `sku ${req.uuid} not found`);
      return toBytes(QuerySKUResponse, { sku });
    },
    [`${Q}SKUs`](ctx, bytes) {
      const req = QuerySKUsRequest.decode(bytes);
      const page = req.activeOnly
        ? paginate(store(ctx), keys.skuActive(), req.pagination, skuAt(ctx))
        : paginate(store(ctx), "sku/", req.pagination, (_k, v) => SKU.decode(v));
      return toBytes(QuerySKUsResponse, { skus: page.items, pagination: page.pagination });
    },
    [`${Q}SKUsByProvider`](ctx, bytes) {
      const req = QuerySKUsByProviderRequest.decode(bytes);
      requireNonEmpty(req.providerUuid, "provider_uuid");
      const prefixKey = req.activeOnly
        ? keys.skuByProviderActive(req.providerUuid)
        : keys.skuByProvider(req.providerUuid);
      const page = paginate(store(ctx), prefixKey, req.pagination, skuAt(ctx));
      return toBytes(QuerySKUsByProviderResponse, { skus: page.items, pagination: page.pagination });
    },
    [`${Q}ProviderByAddress`](ctx, bytes) {
      const req = QueryProviderByAddressRequest.decode(bytes);
      requireNonEmpty(req.address, "address");
      const problem = addressProblem(req.address, prefix);
      if (problem !== undefined) throw grpcError("InvalidArgument", `invalid address: ${problem}`);
      const load = (uuid: string) => {
        const p = keeper.getProvider(ctx, uuid);
        return p !== undefined && (!req.activeOnly || p.active) ? p : undefined;
      };
      const page = paginate(
        store(ctx),
        keys.providerByAddress(req.address.toLowerCase()),
        req.pagination,
        load,
      );
      return toBytes(QueryProviderByAddressResponse, { providers: page.items, pagination: page.pagination });
    },
  };
}
