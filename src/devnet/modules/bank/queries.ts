/**
 * The x/bank query service of an SDK v0.50 app (`/cosmos.bank.v1beta1.Query/…`): balances,
 * spendable balances (no vesting here, so all of them), supply, params and the (empty)
 * denom metadata and send-enabled tables. Lists page by denom.
 */
import {
  QueryAllBalancesRequest,
  QueryAllBalancesResponse,
  QueryBalanceRequest,
  QueryBalanceResponse,
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
import type { QueryHandler } from "../../module.ts";
import { grpcError, paginate } from "../../query-kit.ts";
import { SUPPLY_PREFIX } from "./keeper.ts";
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
      const balances = keeper.getAllBalances(ctx, req.address);
      const limit = Number(req.pagination?.limit ?? 0n) || 100;
      const offset = Number(req.pagination?.offset ?? 0n);
      const page = balances.slice(offset, offset + limit);
      const more = offset + limit < balances.length;
      return QueryAllBalancesResponse.encode({
        balances: page,
        pagination: {
          nextKey: more ? new TextEncoder().encode(balances[offset + limit]?.denom ?? "") : new Uint8Array(),
          total: req.pagination?.countTotal ? BigInt(balances.length) : 0n,
        },
      }).finish();
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
    // No denom metadata and no per-denom send-enabled entries are set at devnet genesis.
    [`${Q}DenomsMetadata`](_ctx, request) {
      QueryDenomsMetadataRequest.decode(request);
      return QueryDenomsMetadataResponse.encode({ metadatas: [], pagination: EMPTY_PAGE }).finish();
    },
    [`${Q}SendEnabled`](_ctx, request) {
      const req = QuerySendEnabledRequest.decode(request);
      const pagination = req.denoms.length > 0 ? undefined : EMPTY_PAGE;
      return QuerySendEnabledResponse.encode({ sendEnabled: [], pagination }).finish();
    },
  };
}
