/**
 * Authz sub-signers, the chain side: extra keys derived from FRED_MNEMONIC at
 * m/44'/118'/i'/0/0 (i = 1…N; index 0 is the provider key itself) that send lease
 * transactions on the provider's behalf through MsgExec, each with its own sequence, so N
 * txs can be in flight at once. The provider grants each one a GenericAuthorization (no
 * expiry) for the three lease messages and keeps their fee balances above a floor. This
 * file holds the reads, the messages and the failure classes; `signer-lanes.ts` the lanes.
 */
import type { EncodeObject } from "@cosmjs/proto-signing";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { QueryGrantsRequest, QueryGrantsResponse } from "cosmjs-types/cosmos/authz/v1beta1/query";
import { MsgExec, MsgGrant } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import { QueryBalanceRequest, QueryBalanceResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { cosmosHdPath, privateKeyFromMnemonic } from "../../auth/keys.ts";
import { parseCoin } from "../../core/coin.ts";
import { FredError } from "../../core/errors.ts";
import { MsgAcknowledgeLease, MsgCloseLease, MsgRejectLease } from "../proto/index.ts";
import { abciQuery, abciQueryOptional, type NodeConnection } from "./rpc.ts";
import { signerFromKey, type TxSigner } from "./signer.ts";
import type { MessageEncoder } from "./tx-messages.ts";

export const LEASE_MSG_TYPE_URLS = [
  MsgAcknowledgeLease.typeUrl,
  MsgRejectLease.typeUrl,
  MsgCloseLease.typeUrl,
] as const;

export const MAX_SUB_SIGNERS = 100;

export interface Coin {
  denom: string;
  amount: bigint;
}

export function deriveSubSigners(mnemonic: string, count: number, prefix?: string): TxSigner[] {
  if (!Number.isInteger(count) || count < 0 || count > MAX_SUB_SIGNERS)
    throw new FredError("ERR_CONFIG", `sub_signer_count must be 0..${MAX_SUB_SIGNERS}`);
  return Array.from({ length: count }, (_, i) =>
    signerFromKey(privateKeyFromMnemonic(mnemonic, cosmosHdPath(i + 1)), prefix),
  );
}

/** Wraps provider-sent messages so `grantee` can deliver them under the provider's grant. */
export function execAs(
  registry: MessageEncoder,
  grantee: string,
  msgs: readonly EncodeObject[],
): EncodeObject {
  return {
    typeUrl: "/cosmos.authz.v1beta1.MsgExec",
    value: MsgExec.fromPartial({ grantee, msgs: msgs.map((m) => registry.encodeAsAny(m)) }),
  };
}

export async function hasGrant(
  conn: NodeConnection,
  granter: string,
  grantee: string,
  msgTypeUrl: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const res = await abciQueryOptional(
    conn,
    "/cosmos.authz.v1beta1.Query/Grants",
    QueryGrantsRequest,
    QueryGrantsResponse,
    QueryGrantsRequest.fromPartial({ granter, grantee, msgTypeUrl }),
    signal,
  );
  return res !== undefined && res.grants.length > 0;
}

/** The lease message type URLs `grantee` has no grant for (a failed read throws). */
export async function missingLeaseGrants(
  conn: NodeConnection,
  granter: string,
  grantee: string,
  signal?: AbortSignal,
): Promise<string[]> {
  const present = await Promise.all(
    LEASE_MSG_TYPE_URLS.map((url) => hasGrant(conn, granter, grantee, url, signal)),
  );
  return LEASE_MSG_TYPE_URLS.filter((_, i) => !present[i]);
}

export function grantMsg(granter: string, grantee: string, msg: string): EncodeObject {
  return {
    typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
    value: MsgGrant.fromPartial({
      granter,
      grantee,
      grant: {
        authorization: {
          typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
          value: GenericAuthorization.encode(GenericAuthorization.fromPartial({ msg })).finish(),
        },
      },
    }),
  };
}

export async function balanceOf(
  conn: NodeConnection,
  address: string,
  denom: string,
  signal?: AbortSignal,
): Promise<bigint> {
  const res = await abciQuery(
    conn,
    "/cosmos.bank.v1beta1.Query/Balance",
    QueryBalanceRequest,
    QueryBalanceResponse,
    QueryBalanceRequest.fromPartial({ address, denom }),
    signal,
  );
  return BigInt(res.balance?.amount ?? "0");
}

export function sendMsg(from: string, to: string, amount: Coin): EncodeObject {
  return {
    typeUrl: "/cosmos.bank.v1beta1.MsgSend",
    value: MsgSend.fromPartial({
      fromAddress: from,
      toAddress: to,
      amount: [{ denom: amount.denom, amount: amount.amount.toString() }],
    }),
  };
}

export function parseCoinText(text: string, what: string): Coin {
  const coin = parseCoin(text);
  if (coin === undefined) throw new FredError("ERR_CONFIG", `${what} must look like 10000000umfx`);
  return coin;
}

/**
 * Why a lease tx sent by a sub-signer failed, when the cause is that signer rather than the
 * leases: its grant is gone (authz "authorization not found", from DeliverTx), it cannot
 * pay the fee (sdk code 5 at CheckTx), or its account does not exist yet (never funded).
 * undefined for everything else, including an unknown outcome (ERR_TX_TIMEOUT): a tx that
 * may have landed is never sent a second time on another key.
 */
export type LaneFault = "grant" | "funds";

export function laneFault(err: unknown): LaneFault | undefined {
  if (!(err instanceof FredError)) return undefined;
  if (err.code === "ERR_CHAIN_ACCOUNT_NOT_FOUND") return "funds";
  if (err.code !== "ERR_TX_FAILED" && err.code !== "ERR_TX_REJECTED") return undefined;
  const codespace = err.details?.codespace;
  const code = err.details?.code;
  if (codespace === "authz") return "grant";
  if (codespace === "sdk" && code === 5) return "funds";
  return undefined;
}

/** A tx the chain refused for good (as opposed to one whose fate is unknown or never sent). */
export function definitelyRefused(err: unknown): boolean {
  return (
    err instanceof FredError &&
    (err.code === "ERR_TX_FAILED" ||
      err.code === "ERR_TX_REJECTED" ||
      err.code === "ERR_TX_INSUFFICIENT_FEE" ||
      err.code === "ERR_TX_GAS_ABOVE_MAX")
  );
}
