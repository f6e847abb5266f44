/**
 * The x/auth query service of an SDK v0.50 app (`/cosmos.auth.v1beta1.Query/…`): Account,
 * AccountInfo, Accounts, ModuleAccounts, ModuleAccountByName, Params, Bech32Prefix and the
 * address codec (AddressBytesToString, AddressStringToBytes).
 * The module accounts the devnet creates answer as ModuleAccount, as on a real node.
 */
import { BaseAccount, ModuleAccount } from "cosmjs-types/cosmos/auth/v1beta1/auth";
import {
  AddressBytesToStringRequest,
  AddressBytesToStringResponse,
  AddressStringToBytesRequest,
  AddressStringToBytesResponse,
  Bech32PrefixResponse,
  QueryAccountInfoRequest,
  QueryAccountInfoResponse,
  QueryAccountRequest,
  QueryAccountResponse,
  QueryAccountsRequest,
  QueryAccountsResponse,
  QueryModuleAccountByNameRequest,
  QueryModuleAccountByNameResponse,
  QueryModuleAccountsResponse,
  QueryParamsResponse,
} from "cosmjs-types/cosmos/auth/v1beta1/query";
import type { Any } from "cosmjs-types/google/protobuf/any";
import { decodeAddress, encodeAddress, moduleAddress } from "../../address.ts";
import { ChainError, sdkErrors } from "../../errors.ts";
import type { QueryContext, QueryHandler } from "../../module.ts";
import { grpcError, paginate } from "../../query-kit.ts";
import { AUTH } from "./types.ts";

export const BASE_ACCOUNT_URL = "/cosmos.auth.v1beta1.BaseAccount";
export const MODULE_ACCOUNT_URL = "/cosmos.auth.v1beta1.ModuleAccount";

/**
 * The module accounts auth genesis creates (in this order: it fixes their account numbers),
 * with the permissions an SDK v0.50 app gives them.
 */
export const MODULE_PERMISSIONS: Readonly<Record<string, readonly string[]>> = {
  fee_collector: [],
  distribution: [],
  bonded_tokens_pool: ["burner", "staking"],
  gov: ["burner"],
};

/** The SDK's default x/auth params (the values the ante handler here charges with). */
const PARAMS = {
  maxMemoCharacters: 256n,
  txSigLimit: 7n,
  txSizeCostPerByte: 10n,
  sigVerifyCostEd25519: 590n,
  sigVerifyCostSecp256k1: 1000n,
};

export const accountKey = (address: string) => `acc/${address}`;

/** The query side checks addresses the way the gRPC server does: code 18, invalid request. */
function queryAddress(address: string, prefix: string): void {
  try {
    decodeAddress(address, prefix);
  } catch (err) {
    const text = err instanceof ChainError ? err.log.replace(/^invalid address: /, "") : String(err);
    throw sdkErrors.invalidRequest.wrap(text.replace(/: invalid address$/, ""));
  }
}

function notFound(address: string): ChainError {
  return grpcError("NotFound", `account ${address} not found`);
}

export function authQueries(prefix: string): Record<string, QueryHandler> {
  const moduleNameOf = new Map(Object.keys(MODULE_PERMISSIONS).map((n) => [moduleAddress(n, prefix), n]));

  /** A stored BaseAccount as the Any a real node returns (ModuleAccount for module addresses). */
  function accountAny(raw: Uint8Array): Any {
    const base = BaseAccount.decode(raw);
    const name = moduleNameOf.get(base.address);
    if (name === undefined) return { typeUrl: BASE_ACCOUNT_URL, value: raw };
    const value = ModuleAccount.encode({
      baseAccount: base,
      name,
      permissions: [...(MODULE_PERMISSIONS[name] ?? [])],
    }).finish();
    return { typeUrl: MODULE_ACCOUNT_URL, value };
  }

  const read = (ctx: QueryContext, address: string) => {
    queryAddress(address, prefix);
    const raw = ctx.store(AUTH).get(accountKey(address));
    if (raw === undefined) throw notFound(address);
    return raw;
  };

  const Q = "/cosmos.auth.v1beta1.Query/";
  return {
    [`${Q}Account`]: (ctx, request) =>
      QueryAccountResponse.encode({
        account: accountAny(read(ctx, QueryAccountRequest.decode(request).address)),
      }).finish(),
    [`${Q}AccountInfo`]: (ctx, request) =>
      QueryAccountInfoResponse.encode({
        info: BaseAccount.decode(read(ctx, QueryAccountInfoRequest.decode(request).address)),
      }).finish(),
    [`${Q}Accounts`](ctx, request) {
      const { pagination } = QueryAccountsRequest.decode(request);
      const page = paginate(ctx.store(AUTH), "acc/", pagination, (_address, raw) => accountAny(raw));
      return QueryAccountsResponse.encode({ accounts: page.items, pagination: page.pagination }).finish();
    },
    [`${Q}ModuleAccounts`](ctx) {
      const accounts = Object.keys(MODULE_PERMISSIONS)
        .sort()
        .map((name) => ctx.store(AUTH).get(accountKey(moduleAddress(name, prefix))))
        .filter((raw): raw is Uint8Array => raw !== undefined)
        .map(accountAny);
      return QueryModuleAccountsResponse.encode({ accounts }).finish();
    },
    [`${Q}ModuleAccountByName`](ctx, request) {
      const { name } = QueryModuleAccountByNameRequest.decode(request);
      if (name.trim() === "") throw grpcError("InvalidArgument", "module name is empty");
      const raw =
        name in MODULE_PERMISSIONS ? ctx.store(AUTH).get(accountKey(moduleAddress(name, prefix))) : undefined;
      if (raw === undefined) throw grpcError("NotFound", `account ${name} not found`);
      return QueryModuleAccountByNameResponse.encode({ account: accountAny(raw) }).finish();
    },
    [`${Q}Params`]: () => QueryParamsResponse.encode({ params: PARAMS }).finish(),
    [`${Q}Bech32Prefix`]: () => Bech32PrefixResponse.encode({ bech32Prefix: prefix }).finish(),
    // The SDK returns plain errors here (not gRPC statuses): baseapp reports them as code 18.
    [`${Q}AddressBytesToString`](_ctx, request) {
      const { addressBytes } = AddressBytesToStringRequest.decode(request);
      if (addressBytes.length === 0)
        throw sdkErrors.invalidRequest.wrap("empty address bytes is not allowed");
      if (addressBytes.length > 255)
        throw sdkErrors.invalidRequest.wrap(`address max length is 255, got ${addressBytes.length}`);
      return AddressBytesToStringResponse.encode({
        addressString: encodeAddress(addressBytes, prefix),
      }).finish();
    },
    [`${Q}AddressStringToBytes`](_ctx, request) {
      const { addressString } = AddressStringToBytesRequest.decode(request);
      if (addressString.trim() === "")
        throw sdkErrors.invalidRequest.wrap("empty address string is not allowed");
      let addressBytes: Uint8Array;
      try {
        addressBytes = decodeAddress(addressString, prefix);
      } catch (err) {
        const text = err instanceof ChainError ? err.log : String(err);
        throw sdkErrors.invalidRequest.wrap(
          text.replace(/^invalid address: /, "").replace(/: invalid address$/, ""),
        );
      }
      return AddressStringToBytesResponse.encode({ addressBytes }).finish();
    },
  };
}
