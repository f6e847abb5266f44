/**
 * Authz sub-signers: extra keys derived from FRED_MNEMONIC at m/44'/118'/i'/0/0 (i = 1…N;
 * index 0 is the provider key itself) that send lease transactions on the provider's behalf
 * through MsgExec, each with its own sequence, so N txs can be in flight at once. The
 * provider grants each one a GenericAuthorization (no expiry) for the three lease messages
 * once, and tops up their fee balances when they fall below a floor.
 */
import type { EncodeObject, Registry } from "@cosmjs/proto-signing";
import { GenericAuthorization } from "cosmjs-types/cosmos/authz/v1beta1/authz";
import { QueryGrantsRequest, QueryGrantsResponse } from "cosmjs-types/cosmos/authz/v1beta1/query";
import { MsgExec, MsgGrant } from "cosmjs-types/cosmos/authz/v1beta1/tx";
import { QueryBalanceRequest, QueryBalanceResponse } from "cosmjs-types/cosmos/bank/v1beta1/query";
import { MsgSend } from "cosmjs-types/cosmos/bank/v1beta1/tx";
import { cosmosHdPath, privateKeyFromMnemonic } from "../../auth/keys.ts";
import type { Clock } from "../../core/clock.ts";
import { parseCoin } from "../../core/coin.ts";
import { FredError } from "../../core/errors.ts";
import type { Logger } from "../../log.ts";
import { MsgAcknowledgeLease, MsgCloseLease, MsgRejectLease } from "../proto/index.ts";
import { abciQuery, abciQueryOptional, type NodeConnection } from "./rpc.ts";
import { signerFromKey, type TxSigner } from "./signer.ts";

export const LEASE_MSG_TYPE_URLS = [
  MsgAcknowledgeLease.typeUrl,
  MsgRejectLease.typeUrl,
  MsgCloseLease.typeUrl,
] as const;

export function deriveSubSigners(mnemonic: string, count: number, prefix?: string): TxSigner[] {
  if (!Number.isInteger(count) || count < 0 || count > 100)
    throw new FredError("ERR_CONFIG", "sub_signer_count must be 0..100");
  return Array.from({ length: count }, (_, i) =>
    signerFromKey(privateKeyFromMnemonic(mnemonic, cosmosHdPath(i + 1)), prefix),
  );
}

/** Wraps provider-sent messages so `grantee` can deliver them under the provider's grant. */
export function execAs(registry: Registry, grantee: string, msgs: readonly EncodeObject[]): EncodeObject {
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
): Promise<boolean> {
  const res = await abciQueryOptional(
    conn,
    "/cosmos.authz.v1beta1.Query/Grants",
    QueryGrantsRequest,
    QueryGrantsResponse,
    QueryGrantsRequest.fromPartial({ granter, grantee, msgTypeUrl }),
  );
  return res !== undefined && res.grants.length > 0;
}

/** MsgGrant messages for every (sub-signer, lease message) pair that has no grant yet. */
export async function missingGrants(
  conn: NodeConnection,
  granter: string,
  subs: readonly TxSigner[],
): Promise<EncodeObject[]> {
  const out: EncodeObject[] = [];
  for (const sub of subs) {
    for (const msg of LEASE_MSG_TYPE_URLS) {
      if (await hasGrant(conn, granter, sub.address, msg)) continue;
      out.push({
        typeUrl: "/cosmos.authz.v1beta1.MsgGrant",
        value: MsgGrant.fromPartial({
          granter,
          grantee: sub.address,
          grant: {
            authorization: {
              typeUrl: "/cosmos.authz.v1beta1.GenericAuthorization",
              value: GenericAuthorization.encode(GenericAuthorization.fromPartial({ msg })).finish(),
            },
          },
        }),
      });
    }
  }
  return out;
}

export function parseCoinText(text: string, what: string): { denom: string; amount: bigint } {
  const coin = parseCoin(text);
  if (coin === undefined) throw new FredError("ERR_CONFIG", `${what} must look like 10000000umfx`);
  return coin;
}

/** MsgSend top-ups for sub-signers whose balance of `min.denom` is below `min.amount`. */
export async function topUps(
  conn: NodeConnection,
  from: string,
  subs: readonly TxSigner[],
  min: { denom: string; amount: bigint },
  amount: { denom: string; amount: bigint },
): Promise<EncodeObject[]> {
  const out: EncodeObject[] = [];
  for (const sub of subs) {
    const res = await abciQuery(
      conn,
      "/cosmos.bank.v1beta1.Query/Balance",
      QueryBalanceRequest,
      QueryBalanceResponse,
      QueryBalanceRequest.fromPartial({ address: sub.address, denom: min.denom }),
    );
    if (BigInt(res.balance?.amount ?? "0") >= min.amount) continue;
    out.push({
      typeUrl: "/cosmos.bank.v1beta1.MsgSend",
      value: MsgSend.fromPartial({
        fromAddress: from,
        toAddress: sub.address,
        amount: [{ denom: amount.denom, amount: amount.amount.toString() }],
      }),
    });
  }
  return out;
}

/** Re-checks sub-signer balances every interval (chained timers on the Clock, never overlapping). */
export class SubSignerFunder {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #check: () => Promise<void>;
  readonly #logger: Logger | undefined;
  #cancel: (() => void) | undefined;
  #stopped = false;
  checks = 0;

  constructor(clock: Clock, intervalMs: number, check: () => Promise<void>, logger?: Logger) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#check = check;
    this.#logger = logger;
  }

  start(): void {
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#cancel = this.#clock.setTimer(this.#intervalMs, () => {
      this.checks++;
      this.#check()
        .catch((err: unknown) =>
          this.#logger?.warn({ err: (err as Error).message }, "sub-signer funding check failed"),
        )
        .finally(() => this.#schedule());
    });
  }

  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
  }
}
