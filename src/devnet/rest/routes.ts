/**
 * The REST gateway's one table: an HTTP path template (the `google.api.http` annotation of the
 * SDK v0.50 and manifest-ledger proto files) → the gRPC query method and its request/response
 * types. `{name}` segments fill the request field of that proto name; the query string fills
 * any other field. docs/devnet.md lists the same table.
 */
import * as auth from "cosmjs-types/cosmos/auth/v1beta1/query";
import * as authz from "cosmjs-types/cosmos/authz/v1beta1/query";
import * as bank from "cosmjs-types/cosmos/bank/v1beta1/query";
import * as node from "cosmjs-types/cosmos/base/node/v1beta1/query";
import * as tendermint from "cosmjs-types/cosmos/base/tendermint/v1beta1/query";
import * as txs from "cosmjs-types/cosmos/tx/v1beta1/service";
import * as chain from "../../chain/proto/index.ts";
import type { AnyCodec } from "./proto-json.ts";

export interface QueryRoute {
  readonly template: string;
  /** ABCI query path of the gRPC method, e.g. "/cosmos.bank.v1beta1.Query/AllBalances". */
  readonly method: string;
  readonly request: AnyCodec;
  readonly response: AnyCodec;
}

const c = (codec: unknown) => codec as AnyCodec;

function routes(
  service: string,
  entries: ReadonlyArray<readonly [template: string, method: string, request: unknown, response: unknown]>,
): QueryRoute[] {
  return entries.map(([template, method, request, response]) => ({
    template,
    method: `/${service}/${method}`,
    request: c(request),
    response: c(response),
  }));
}

const BANK = "/cosmos/bank/v1beta1";
const AUTH = "/cosmos/auth/v1beta1";
const BILLING = "/liftedinit/billing/v1";
const SKU = "/liftedinit/sku/v1";

/** Every GET route the gateway serves. */
export const QUERY_ROUTES: readonly QueryRoute[] = [
  ...routes("cosmos.bank.v1beta1.Query", [
    [
      `${BANK}/balances/{address}`,
      "AllBalances",
      bank.QueryAllBalancesRequest,
      bank.QueryAllBalancesResponse,
    ],
    [`${BANK}/balances/{address}/by_denom`, "Balance", bank.QueryBalanceRequest, bank.QueryBalanceResponse],
    [
      `${BANK}/spendable_balances/{address}`,
      "SpendableBalances",
      bank.QuerySpendableBalancesRequest,
      bank.QuerySpendableBalancesResponse,
    ],
    [`${BANK}/supply`, "TotalSupply", bank.QueryTotalSupplyRequest, bank.QueryTotalSupplyResponse],
    [`${BANK}/supply/by_denom`, "SupplyOf", bank.QuerySupplyOfRequest, bank.QuerySupplyOfResponse],
    [`${BANK}/params`, "Params", bank.QueryParamsRequest, bank.QueryParamsResponse],
    [
      `${BANK}/denoms_metadata/{denom}`,
      "DenomMetadata",
      bank.QueryDenomMetadataRequest,
      bank.QueryDenomMetadataResponse,
    ],
    [
      `${BANK}/denoms_metadata_by_query_string`,
      "DenomMetadataByQueryString",
      bank.QueryDenomMetadataByQueryStringRequest,
      bank.QueryDenomMetadataByQueryStringResponse,
    ],
    [
      `${BANK}/denoms_metadata`,
      "DenomsMetadata",
      bank.QueryDenomsMetadataRequest,
      bank.QueryDenomsMetadataResponse,
    ],
    [`${BANK}/send_enabled`, "SendEnabled", bank.QuerySendEnabledRequest, bank.QuerySendEnabledResponse],
  ]),
  ...routes("cosmos.auth.v1beta1.Query", [
    [`${AUTH}/accounts`, "Accounts", auth.QueryAccountsRequest, auth.QueryAccountsResponse],
    [`${AUTH}/accounts/{address}`, "Account", auth.QueryAccountRequest, auth.QueryAccountResponse],
    [
      `${AUTH}/account_info/{address}`,
      "AccountInfo",
      auth.QueryAccountInfoRequest,
      auth.QueryAccountInfoResponse,
    ],
    [`${AUTH}/params`, "Params", auth.QueryParamsRequest, auth.QueryParamsResponse],
    [
      `${AUTH}/module_accounts`,
      "ModuleAccounts",
      auth.QueryModuleAccountsRequest,
      auth.QueryModuleAccountsResponse,
    ],
    [
      `${AUTH}/module_accounts/{name}`,
      "ModuleAccountByName",
      auth.QueryModuleAccountByNameRequest,
      auth.QueryModuleAccountByNameResponse,
    ],
    [`${AUTH}/bech32`, "Bech32Prefix", auth.Bech32PrefixRequest, auth.Bech32PrefixResponse],
    // AddressStringToBytes is annotated with the same template ({address_string}); on the SDK
    // gateway the two collide and AddressBytesToString is the one a request reaches.
    [
      `${AUTH}/bech32/{address_bytes}`,
      "AddressBytesToString",
      auth.AddressBytesToStringRequest,
      auth.AddressBytesToStringResponse,
    ],
  ]),
  ...routes("cosmos.authz.v1beta1.Query", [
    ["/cosmos/authz/v1beta1/grants", "Grants", authz.QueryGrantsRequest, authz.QueryGrantsResponse],
    [
      "/cosmos/authz/v1beta1/grants/granter/{granter}",
      "GranterGrants",
      authz.QueryGranterGrantsRequest,
      authz.QueryGranterGrantsResponse,
    ],
    [
      "/cosmos/authz/v1beta1/grants/grantee/{grantee}",
      "GranteeGrants",
      authz.QueryGranteeGrantsRequest,
      authz.QueryGranteeGrantsResponse,
    ],
  ]),
  ...routes("cosmos.tx.v1beta1.Service", [
    ["/cosmos/tx/v1beta1/txs/{hash}", "GetTx", txs.GetTxRequest, txs.GetTxResponse],
    ["/cosmos/tx/v1beta1/txs", "GetTxsEvent", txs.GetTxsEventRequest, txs.GetTxsEventResponse],
  ]),
  ...routes("cosmos.base.tendermint.v1beta1.Service", [
    [
      "/cosmos/base/tendermint/v1beta1/node_info",
      "GetNodeInfo",
      tendermint.GetNodeInfoRequest,
      tendermint.GetNodeInfoResponse,
    ],
    [
      "/cosmos/base/tendermint/v1beta1/syncing",
      "GetSyncing",
      tendermint.GetSyncingRequest,
      tendermint.GetSyncingResponse,
    ],
    [
      "/cosmos/base/tendermint/v1beta1/blocks/latest",
      "GetLatestBlock",
      tendermint.GetLatestBlockRequest,
      tendermint.GetLatestBlockResponse,
    ],
    [
      "/cosmos/base/tendermint/v1beta1/blocks/{height}",
      "GetBlockByHeight",
      tendermint.GetBlockByHeightRequest,
      tendermint.GetBlockByHeightResponse,
    ],
  ]),
  ...routes("cosmos.base.node.v1beta1.Service", [
    ["/cosmos/base/node/v1beta1/config", "Config", node.ConfigRequest, node.ConfigResponse],
    ["/cosmos/base/node/v1beta1/status", "Status", node.StatusRequest, node.StatusResponse],
  ]),
  ...routes("liftedinit.billing.v1.Query", [
    [`${BILLING}/params`, "Params", chain.BillingQueryParamsRequest, chain.BillingQueryParamsResponse],
    [`${BILLING}/lease/{lease_uuid}`, "Lease", chain.QueryLeaseRequest, chain.QueryLeaseResponse],
    [`${BILLING}/leases`, "Leases", chain.QueryLeasesRequest, chain.QueryLeasesResponse],
    [
      `${BILLING}/leases/tenant/{tenant}`,
      "LeasesByTenant",
      chain.QueryLeasesByTenantRequest,
      chain.QueryLeasesByTenantResponse,
    ],
    [
      `${BILLING}/leases/provider/{provider_uuid}`,
      "LeasesByProvider",
      chain.QueryLeasesByProviderRequest,
      chain.QueryLeasesByProviderResponse,
    ],
    [
      `${BILLING}/leases/sku/{sku_uuid}`,
      "LeasesBySKU",
      chain.QueryLeasesBySKURequest,
      chain.QueryLeasesBySKUResponse,
    ],
    [
      `${BILLING}/credit/{tenant}`,
      "CreditAccount",
      chain.QueryCreditAccountRequest,
      chain.QueryCreditAccountResponse,
    ],
    [
      `${BILLING}/credits`,
      "CreditAccounts",
      chain.QueryCreditAccountsRequest,
      chain.QueryCreditAccountsResponse,
    ],
    [
      `${BILLING}/credit/{tenant}/estimate`,
      "CreditEstimate",
      chain.QueryCreditEstimateRequest,
      chain.QueryCreditEstimateResponse,
    ],
    [
      `${BILLING}/credit-address/{tenant}`,
      "CreditAddress",
      chain.QueryCreditAddressRequest,
      chain.QueryCreditAddressResponse,
    ],
    [
      `${BILLING}/lease/{lease_uuid}/withdrawable`,
      "WithdrawableAmount",
      chain.QueryWithdrawableAmountRequest,
      chain.QueryWithdrawableAmountResponse,
    ],
    [
      `${BILLING}/provider/{provider_uuid}/withdrawable`,
      "ProviderWithdrawable",
      chain.QueryProviderWithdrawableRequest,
      chain.QueryProviderWithdrawableResponse,
    ],
    [
      `${BILLING}/lease/by-domain/{custom_domain}`,
      "LeaseByCustomDomain",
      chain.QueryLeaseByCustomDomainRequest,
      chain.QueryLeaseByCustomDomainResponse,
    ],
  ]),
  ...routes("liftedinit.sku.v1.Query", [
    [`${SKU}/params`, "Params", chain.SkuQueryParamsRequest, chain.SkuQueryParamsResponse],
    [`${SKU}/provider/{uuid}`, "Provider", chain.QueryProviderRequest, chain.QueryProviderResponse],
    [
      `${SKU}/provider/address/{address}`,
      "ProviderByAddress",
      chain.QueryProviderByAddressRequest,
      chain.QueryProviderByAddressResponse,
    ],
    [`${SKU}/providers`, "Providers", chain.QueryProvidersRequest, chain.QueryProvidersResponse],
    [`${SKU}/sku/{uuid}`, "SKU", chain.QuerySKURequest, chain.QuerySKUResponse],
    [`${SKU}/skus`, "SKUs", chain.QuerySKUsRequest, chain.QuerySKUsResponse],
    [
      `${SKU}/skus/provider/{provider_uuid}`,
      "SKUsByProvider",
      chain.QuerySKUsByProviderRequest,
      chain.QuerySKUsByProviderResponse,
    ],
  ]),
];

export interface RouteMatch<R> {
  route: R;
  /** Path parameters by proto field name, URL-decoded. */
  params: [string, string][];
}

/**
 * The route whose template matches `path` segment for segment (a `{name}` segment takes any
 * one segment). Literal segments beat parameters, so `/blocks/latest` and
 * `/lease/by-domain/x` are not read as `/blocks/{height}` or `/lease/{lease_uuid}/…`.
 */
export function matchRoute<R extends { template: string }>(
  table: readonly R[],
  path: string,
): RouteMatch<R> | undefined {
  const segments = path.split("/").slice(1);
  let best: { match: RouteMatch<R>; literals: number } | undefined;
  for (const route of table) {
    const parts = route.template.split("/").slice(1);
    if (parts.length !== segments.length) continue;
    const params: [string, string][] = [];
    let literals = 0;
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const part = parts[i]!;
      const seg = segments[i]!;
      if (part.startsWith("{") && part.endsWith("}")) {
        // As in grpc-gateway, a parameter takes one segment, an empty one too (`/lease/`).
        params.push([part.slice(1, -1), decodeSegment(seg)]);
      } else if (part === seg) literals++;
      else ok = false;
    }
    if (ok && (best === undefined || literals > best.literals)) best = { match: { route, params }, literals };
  }
  return best?.match;
}

function decodeSegment(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}
