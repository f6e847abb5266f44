/**
 * SKU and provider look-ups for the tenant CLI (`--sku docker-small` resolves to that SKU's
 * UUID, and a provider's record says where its providerd answers) and for the operator's
 * tools (`fred chain sku list`, providerd's online preflight).
 */
import { FredError } from "../../core/errors.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import {
  type Provider,
  QueryProviderRequest,
  QueryProviderResponse,
  QuerySKURequest,
  QuerySKUResponse,
  QuerySKUsByProviderRequest,
  QuerySKUsByProviderResponse,
  QuerySKUsRequest,
  QuerySKUsResponse,
  type SKU,
  SkuQueryParamsRequest,
  SkuQueryParamsResponse,
} from "../proto/index.ts";
import { abciQuery, abciQueryOptional, type NodeConnection } from "./rpc.ts";

export async function activeSkus(conn: NodeConnection, signal?: AbortSignal): Promise<SKU[]> {
  return listSkus(conn, { activeOnly: true }, signal);
}

export interface SkuFilter {
  /** Only active SKUs (the chain's active index), or every SKU ever created. */
  activeOnly: boolean;
  /** Only this provider's SKUs. */
  providerUuid?: string;
}

/** Every page of the chain's SKU listing, for all providers or for one. */
export async function listSkus(
  conn: NodeConnection,
  filter: SkuFilter,
  signal?: AbortSignal,
): Promise<SKU[]> {
  const out: SKU[] = [];
  let key: Uint8Array = new Uint8Array();
  for (let page = 0; page < 1000; page++) {
    const pagination = { key, limit: 1000n };
    const res =
      filter.providerUuid === undefined
        ? await abciQuery(
            conn,
            "/liftedinit.sku.v1.Query/SKUs",
            QuerySKUsRequest,
            QuerySKUsResponse,
            QuerySKUsRequest.fromPartial({ activeOnly: filter.activeOnly, pagination }),
            signal,
          )
        : await abciQuery(
            conn,
            "/liftedinit.sku.v1.Query/SKUsByProvider",
            QuerySKUsByProviderRequest,
            QuerySKUsByProviderResponse,
            QuerySKUsByProviderRequest.fromPartial({
              providerUuid: filter.providerUuid,
              activeOnly: filter.activeOnly,
              pagination,
            }),
            signal,
          );
    out.push(...res.skus);
    const next = res.pagination?.nextKey ?? new Uint8Array();
    if (next.length === 0 || Buffer.from(next).equals(Buffer.from(key))) break;
    key = next;
  }
  return out;
}

/** One SKU by UUID, active or not, or undefined when the chain has none. */
export async function skuRecord(
  conn: NodeConnection,
  uuid: string,
  signal?: AbortSignal,
): Promise<SKU | undefined> {
  if (!isCanonicalUuid(uuid))
    throw new FredError("ERR_INVALID_ARGUMENT", "SKU UUID must be a canonical lowercase UUID");
  const res = await abciQueryOptional(
    conn,
    "/liftedinit.sku.v1.Query/SKU",
    QuerySKURequest,
    QuerySKUResponse,
    QuerySKURequest.fromPartial({ uuid }),
    signal,
  );
  return res?.sku;
}

/** A UUID passes through; a name must match exactly one active SKU. */
export async function resolveSku(conn: NodeConnection, ref: string, signal?: AbortSignal): Promise<string> {
  if (isCanonicalUuid(ref)) return ref;
  const matches = (await activeSkus(conn, signal)).filter((s) => s.name === ref);
  if (matches.length === 0) throw new FredError("ERR_USAGE", `no active SKU named ${JSON.stringify(ref)}`);
  if (matches.length > 1)
    throw new FredError(
      "ERR_USAGE",
      `SKU name ${JSON.stringify(ref)} is ambiguous (${matches.length} active SKUs); use its UUID`,
    );
  return (matches[0] as SKU).uuid;
}

/** A provider's on-chain record (its `api_url` is where tenants reach its providerd), or undefined. */
export async function providerRecord(
  conn: NodeConnection,
  uuid: string,
  signal?: AbortSignal,
): Promise<Provider | undefined> {
  if (!isCanonicalUuid(uuid))
    throw new FredError("ERR_INVALID_ARGUMENT", "provider UUID must be a canonical lowercase UUID");
  const res = await abciQueryOptional(
    conn,
    "/liftedinit.sku.v1.Query/Provider",
    QueryProviderRequest,
    QueryProviderResponse,
    QueryProviderRequest.fromPartial({ uuid }),
    signal,
  );
  return res?.provider;
}

/**
 * x/sku's allowed list: besides the module authority, the only addresses that may create
 * providers and SKUs (the authority itself is not queryable).
 */
export async function skuAllowedList(conn: NodeConnection, signal?: AbortSignal): Promise<string[]> {
  const res = await abciQuery(
    conn,
    "/liftedinit.sku.v1.Query/Params",
    SkuQueryParamsRequest,
    SkuQueryParamsResponse,
    SkuQueryParamsRequest.fromPartial({}),
    signal,
  );
  return res.params?.allowedList ?? [];
}
