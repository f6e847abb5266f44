/**
 * The x/bank query service of an SDK v0.50 app (`/cosmos.bank.v1beta1.Query/…`): balances,
 * spendable balances (no vesting here, so all of them), supply, params, the denom metadata
 * genesis sets, and the (empty) send-enabled table. Lists page by denom.
 */

import { Metadata } from "cosmjs-types/cosmos/bank/v1beta1/bank";
import {
  QueryAllBalancesRequest,
  QueryAllBalancesResponse,
  QueryBalanceRequest,
  QueryBalanceResponse,
  QueryDenomMetadataByQueryStringRequest,
  QueryDenomMetadataByQueryStringResponse,
  QueryDenomMetadataRequest,
  QueryDenomMetadataResponse,
  QueryDenomsMetadataRequest,
  QueryDenomsMetadataResponse,
  QueryParamsResponse,
  QuerySendEnabledRequest,
  QuerySendEnabledResponse,
  QuerySpendableBalancesRequest,
  QuerySpendableBalancesResponse,
  QuerySupplyOfRequest,
  QuerySupplyOfResponse,
  QueryTotalSupplyRequest,
  QueryTotalSupplyResponse,
} from "cosmjs-types/cosmos/bank/v1beta1/query";
import { decodeAddress } from "../../address.ts";
import { coin, isValidDenom } from "../../coins.ts";
import { ChainError, sdkErrors } from "../../errors.ts";
import type { QueryContext, QueryHandler } from "../../module.ts";
import { grpcError, paginate } from "../../query-kit.ts";
import { METADATA_PREFIX, SUPPLY_PREFIX } from "./keeper.ts";
import { BANK, type BankKeeper } from "./types.ts";

const decoder = new TextDecoder();
const EMPTY_PAGE = { nextKey: new Uint8Array(), total: 0n };

function queryAddress(address: string, prefix: string): void {
  try {
    decodeAddress(address, prefix);
  } catch (err) {
    const text = err instanceof ChainError ? err.log : String(err);
    throw sdkErrors.invalidRequest.wrap(
      text.replace(/^invalid address: /, "").replace(/: invalid address$/, ""),
    );
  }
}

export function bankQueries(keeper: BankKeeper, prefix: string): Record<string, QueryHandler> {
  const Q = "/cosmos.bank.v1beta1.Query/";
  const metadataOf = (ctx: QueryContext, denom: string): Metadata => {
    if (!isValidDenom(denom)) throw grpcError("InvalidArgument", `invalid denom: ${denom}`);
    const metadata = keeper.getDenomMetadata(ctx, denom);
    if (metadata === undefined) throw grpcError("NotFound", `client metadata for denom ${denom}`);
    return metadata;
  };
  return {
    [`${Q}Balance`](ctx, request) {
      const req = QueryBalanceRequest.decode(request);
      queryAddress(req.address, prefix);
      if (!isValidDenom(req.denom)) throw sdkErrors.invalidRequest.wrap(`invalid denom: ${req.denom}`);
      const amount = keeper.getBalance(ctx, req.address, req.denom);
      return QueryBalanceResponse.encode({ balance: coin(amount, req.denom) }).finish();
    },
    [`${Q}AllBalances`](ctx, request) {
      const req = QueryAllBalancesRequest.decode(request);
      queryAddress(req.address, prefix);
      const page = paginate(ctx.store(BANK), `bal/${req.address}/`, req.pagination, (denom, raw) =>
        coin(decoder.decode(raw), denom),
      );
      return QueryAllBalancesResponse.encode({ balances: page.items, pagination: page.pagination }).finish();
    },
    [`${Q}SpendableBalances`](ctx, request) {
      const req = QuerySpendableBalancesRequest.decode(request);
      try {
        decodeAddress(req.address, prefix);
      } catch (err) {
        const text = err instanceof ChainError ? err.log.replace(/: invalid address$/, "") : String(err);
        throw grpcError("InvalidArgument", text);
      }
      const page = paginate(ctx.store(BANK), `bal/${req.address}/`, req.pagination, (denom, raw) =>
        coin(decoder.decode(raw), denom),
      );
      return QuerySpendableBalancesResponse.encode({
        balances: page.items,
        pagination: page.pagination,
      }).finish();
    },
    [`${Q}SupplyOf`](ctx, request) {
      const req = QuerySupplyOfRequest.decode(request);
      if (!isValidDenom(req.denom)) throw sdkErrors.invalidRequest.wrap(`invalid denom: ${req.denom}`);
      return QuerySupplyOfResponse.encode({
        amount: coin(keeper.getSupply(ctx, req.denom), req.denom),
      }).finish();
    },
    [`${Q}TotalSupply`](ctx, request) {
      const req = QueryTotalSupplyRequest.decode(request);
      const page = paginate(ctx.store(BANK), SUPPLY_PREFIX, req.pagination, (denom, raw) =>
        coin(decoder.decode(raw), denom),
      );
      return QueryTotalSupplyResponse.encode({ supply: page.items, pagination: page.pagination }).finish();
    },
    [`${Q}Params`]: () =>
      QueryParamsResponse.encode({ params: { sendEnabled: [], defaultSendEnabled: true } }).finish(),
    [`${Q}DenomMetadata`](ctx, request) {
      const { denom } = QueryDenomMetadataRequest.decode(request);
      return QueryDenomMetadataResponse.encode({ metadata: metadataOf(ctx, denom) }).finish();
    },
    // v0.50 serves the same lookup with the denom in the query string (denoms with slashes).
    [`${Q}DenomMetadataByQueryString`](ctx, request) {
      const { denom } = QueryDenomMetadataByQueryStringRequest.decode(request);
      return QueryDenomMetadataByQueryStringResponse.encode({ metadata: metadataOf(ctx, denom) }).finish();
    },
    [`${Q}DenomsMetadata`](ctx, request) {
      const req = QueryDenomsMetadataRequest.decode(request);
      const page = paginate(ctx.store(BANK), METADATA_PREFIX, req.pagination, (_denom, raw) =>
        Metadata.decode(raw),
      );
      return QueryDenomsMetadataResponse.encode({
        metadatas: page.items,
        pagination: page.pagination,
      }).finish();
    },
    // No per-denom send-enabled entries are set at devnet genesis.
    [`${Q}SendEnabled`](_ctx, request) {
      const req = QuerySendEnabledRequest.decode(request);
      const pagination = req.denoms.length > 0 ? undefined : EMPTY_PAGE;
      return QuerySendEnabledResponse.encode({ sendEnabled: [], pagination }).finish();
    },
  };
}
