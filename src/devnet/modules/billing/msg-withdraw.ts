/**
 * MsgWithdraw. Specific-lease mode is atomic and fails with code 15 when nothing was settled;
 * provider-wide mode walks the provider's ACTIVE leases strictly after `key`, up to `limit`,
 * best effort (ineligible leases are reported as failed), and returns `next_key` = the last
 * processed UUID while more remain.
 */

import {
  type Lease,
  LeaseState,
  MsgWithdraw,
  MsgWithdrawResponse,
  timestampFromNanos,
} from "../../../chain/proto/index.ts";
import { addAll, type Coins, coinsToProto, formatCoins } from "../../coins.ts";
import {
  WITHDRAW_DEFAULT_LIMIT,
  WITHDRAW_MAX_KEY_BYTES,
  WITHDRAW_MAX_LIMIT,
  withdrawPage,
} from "../../economics/paging.ts";
import { isUuidV7 } from "../../economics/uuidv7.ts";
import type { ExecContext, MsgHandler } from "../../module.ts";
import { billingErrors } from "./errors.ts";
import { defineMsg, EventBuffer } from "./handler.ts";
import {
  AccountCache,
  type BillingDeps,
  isProviderOrAuthority,
  nowNs,
  nowTs,
  settleActive,
  terminate,
} from "./ledger.ts";
import { CREDIT_EXHAUSTED } from "./msg-lifecycle.ts";
import { BILLING, bkeys, getLease, putLease, uuidsUnder } from "./store.ts";
import { checkAddress, checkLeaseUuids } from "./validate.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

interface Outcome {
  transfer: Coins;
  autoClosed: boolean;
  /** False when nothing happened (no elapsed whole second and credit left). */
  committed: boolean;
}

export function withdrawMessages(deps: BillingDeps): MsgHandler<unknown>[] {
  /** Settles one ACTIVE lease for a withdrawal; auto-closes it when its credit is exhausted. */
  function withdrawOne(ctx: ExecContext, cache: AccountCache, lease: Lease): Outcome {
    const account = cache.mustGet(lease.tenant);
    const now = nowNs(ctx);
    const s = settleActive(ctx, deps, lease, account, now);
    if (s.exhausted) {
      const at = nowTs(ctx);
      terminate(ctx, lease, account, LeaseState.LEASE_STATE_CLOSED, (x) => {
        x.closedAt = at;
        x.lastSettledAt = at;
        x.closureReason = CREDIT_EXHAUSTED;
      });
      cache.touch(account);
      return { transfer: s.transfer, autoClosed: true, committed: true };
    }
    if (s.seconds === 0n) return { transfer: new Map(), autoClosed: false, committed: false };
    lease.lastSettledAt = timestampFromNanos(s.carriedSettledNs);
    putLease(ctx, lease, lease.state);
    cache.touch(account);
    return { transfer: s.transfer, autoClosed: false, committed: true };
  }

  return [
    defineMsg({
      codec: MsgWithdraw,
      response: MsgWithdrawResponse,
      signer: (m) => m.sender,
      validateBasic(m) {
        checkAddress(billingErrors.unauthorized, "sender", m.sender, deps.prefix);
        const byLease = m.leaseUuids.length > 0;
        if (byLease === (m.providerUuid !== ""))
          throw billingErrors.invalidRequest.wrap("set exactly one of lease_uuids and provider_uuid");
        if (m.key.length > WITHDRAW_MAX_KEY_BYTES)
          throw billingErrors.invalidRequest.wrap(`key above ${WITHDRAW_MAX_KEY_BYTES} bytes`);
        if (byLease) {
          if (m.key.length > 0)
            throw billingErrors.invalidRequest.wrap("key is only valid with provider_uuid");
          checkLeaseUuids(m.leaseUuids);
        } else {
          if (!isUuidV7(m.providerUuid))
            throw billingErrors.providerNotFound.wrap(`invalid provider uuid ${m.providerUuid}`);
          if (m.limit > WITHDRAW_MAX_LIMIT)
            throw billingErrors.invalidLease.wrap(`limit above ${WITHDRAW_MAX_LIMIT}`);
        }
      },
      execute(ctx, m) {
        return m.leaseUuids.length > 0 ? specific(ctx, m) : providerWide(ctx, m);
      },
    }),
  ];

  function specific(ctx: ExecContext, m: MsgWithdraw) {
    const leases = m.leaseUuids.map((id) => {
      const l = getLease(ctx, id);
      if (l === undefined) throw billingErrors.leaseNotFound.wrap(id);
      return l;
    });
    const providerUuid = leases[0]!.providerUuid;
    for (const l of leases)
      if (l.providerUuid !== providerUuid)
        throw billingErrors.invalidLease.wrap("leases of several providers");
    const { provider, allowed } = isProviderOrAuthority(ctx, deps, providerUuid, m.sender);
    if (!allowed)
      throw billingErrors.unauthorized.wrap(`${m.sender} may not withdraw for provider ${providerUuid}`);
    const cache = new AccountCache(ctx);
    const events = new EventBuffer();
    const total: Coins = new Map();
    let count = 0;
    for (const lease of leases) {
      if (lease.state !== LeaseState.LEASE_STATE_ACTIVE) continue;
      const out = withdrawOne(ctx, cache, lease);
      if (!out.committed) continue;
      count++;
      addAll(total, out.transfer);
      events.push("provider_withdraw", {
        lease_uuid: lease.uuid,
        amount: formatCoins(out.transfer),
        provider_uuid: providerUuid,
        payout_address: provider.payoutAddress,
        auto_closed: out.autoClosed ? "true" : undefined,
      });
    }
    if (count === 0) throw billingErrors.noWithdrawable.error();
    cache.flush();
    if (leases.length > 1)
      events.push("batch_withdraw", {
        lease_count: String(count),
        provider_uuid: providerUuid,
        amount: formatCoins(total),
        payout_address: provider.payoutAddress,
      });
    events.flush(ctx);
    return {
      totalAmounts: coinsToProto(total),
      payoutAddress: provider.payoutAddress,
      withdrawalCount: BigInt(count),
      hasMore: false,
      nextKey: new Uint8Array(),
      failedLeaseUuids: [],
    };
  }

  function providerWide(ctx: ExecContext, m: MsgWithdraw) {
    const { provider, allowed } = isProviderOrAuthority(ctx, deps, m.providerUuid, m.sender);
    if (!allowed)
      throw billingErrors.unauthorized.wrap(`${m.sender} may not withdraw for provider ${m.providerUuid}`);
    const limit = Number(m.limit === 0n ? WITHDRAW_DEFAULT_LIMIT : m.limit);
    const after = decoder.decode(m.key);
    const prefix = bkeys.byProvider(provider.uuid, LeaseState.LEASE_STATE_ACTIVE);
    const ids = uuidsUnder(ctx.store(BILLING), prefix, after === "" ? undefined : after);
    const page = withdrawPage(ids, after, limit);
    const cache = new AccountCache(ctx);
    const events = new EventBuffer();
    const total: Coins = new Map();
    const failed: string[] = [];
    let count = 0;
    let autoClosed = 0;
    for (const id of page.page) {
      const lease = getLease(ctx, id)!;
      if (provider.payoutAddress === cache.get(lease.tenant)?.creditAddress) {
        failed.push(id);
        continue;
      }
      const out = withdrawOne(ctx, cache, lease);
      if (!out.committed) continue;
      count++;
      addAll(total, out.transfer);
      events.push("provider_withdraw", {
        lease_uuid: id,
        amount: formatCoins(out.transfer),
        provider_uuid: provider.uuid,
        payout_address: provider.payoutAddress,
        auto_closed: out.autoClosed ? "true" : undefined,
      });
      if (out.autoClosed) {
        autoClosed++;
        events.push("lease_auto_closed", {
          lease_uuid: id,
          tenant: lease.tenant,
          provider_uuid: provider.uuid,
          amount: formatCoins(out.transfer),
          payout_address: provider.payoutAddress,
          reason: "credit_exhausted",
        });
      }
    }
    cache.flush();
    events.push("batch_withdraw", {
      provider_uuid: provider.uuid,
      amount: formatCoins(total),
      lease_count: String(count),
      payout_address: provider.payoutAddress,
      auto_closed: String(autoClosed),
      failed_lease_count: String(failed.length),
      failed_lease_uuids: failed.join(","),
    });
    events.flush(ctx);
    return {
      totalAmounts: coinsToProto(total),
      payoutAddress: provider.payoutAddress,
      withdrawalCount: BigInt(count),
      hasMore: page.hasMore,
      nextKey: encoder.encode(page.nextKey),
      failedLeaseUuids: failed,
    };
  }
}
