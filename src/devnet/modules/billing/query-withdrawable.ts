/**
 * Query/ProviderWithdrawable: a dry run of one provider-wide withdraw page over ACTIVE leases
 * (default 50, max 100, cursor only) against page-local virtual balances, so leases of one
 * tenant are not double counted. Its next_key is the first unread lease (inclusive), unlike
 * MsgWithdraw's last-processed cursor.
 */
import {
  LeaseState,
  QueryProviderWithdrawableRequest,
  QueryProviderWithdrawableResponse,
  toBytes,
} from "../../../chain/proto/index.ts";
import { addAll, type Coins, coinsFromProto, coinsToProto, subAll } from "../../coins.ts";
import { inclusivePage } from "../../economics/paging.ts";
import { leaseRate, settle } from "../../economics/settlement.ts";
import { isUuidV7 } from "../../economics/uuidv7.ts";
import type { QueryHandler } from "../../module.ts";
import { grpcError } from "../../query-kit.ts";
import { type BillingDeps, balanceOf, nowNs, trancheOf, tsNs } from "./ledger.ts";
import { BILLING, bkeys, getAccount, getLease } from "./store.ts";

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 100;

export function providerWithdrawableQuery(deps: BillingDeps): QueryHandler {
  return (ctx, bytes) => {
    const req = QueryProviderWithdrawableRequest.decode(bytes);
    if (!isUuidV7(req.providerUuid))
      throw grpcError("InvalidArgument", `invalid provider_uuid: ${req.providerUuid}`);
    const p = req.pagination;
    if (p !== undefined && (p.offset > 0n || p.countTotal))
      throw grpcError("InvalidArgument", "offset and count_total are not supported; use key");
    let limit = Number(p?.limit ?? 0n) || DEFAULT_LIMIT;
    if (limit > MAX_LIMIT) limit = MAX_LIMIT;
    const from = p?.key.length ? new TextDecoder().decode(p.key) : "";
    const prefix = bkeys.byProvider(req.providerUuid, LeaseState.LEASE_STATE_ACTIVE);
    const entries = function* () {
      const range = from === "" ? { prefix } : { prefix, start: prefix + from };
      for (const [key] of ctx.store(BILLING).iterate(range))
        yield [key.slice(prefix.length), key.slice(prefix.length)] as [string, string];
    };
    const page = inclusivePage(entries(), from, limit);
    const balances = new Map<string, Coins>();
    const reservations = new Map<string, Coins>();
    const total: Coins = new Map();
    let count = 0n;
    for (const uuid of page.items) {
      const lease = getLease(ctx, uuid)!;
      const account = getAccount(ctx, lease.tenant);
      if (account === undefined) continue;
      if (!balances.has(account.tenant)) {
        balances.set(account.tenant, balanceOf(ctx, deps.bank, account.creditAddress));
        reservations.set(account.tenant, coinsFromProto(account.reservedAmounts));
      }
      const balance = balances.get(account.tenant)!;
      const reserved = reservations.get(account.tenant)!;
      const tranche = trancheOf(lease);
      const s = settle({
        rate: leaseRate(lease.items),
        lastSettledNs: tsNs(lease.lastSettledAt),
        toNs: nowNs(ctx),
        balance,
        reserved,
        tranche,
      });
      subAll(balance, s.transfer);
      subAll(reserved, s.consumed);
      if (s.exhausted) subAll(reserved, subtractCopy(tranche, s.consumed));
      if (s.exhausted || s.seconds > 0n) count++;
      addAll(total, s.transfer);
    }
    return toBytes(QueryProviderWithdrawableResponse, {
      amounts: coinsToProto(total),
      leaseCount: count,
      pagination: { nextKey: new TextEncoder().encode(page.nextKey), total: 0n },
      failedLeaseUuids: [],
    });
  };
}

function subtractCopy(a: Coins, b: Coins): Coins {
  const out = new Map(a);
  subAll(out, b);
  return out;
}
