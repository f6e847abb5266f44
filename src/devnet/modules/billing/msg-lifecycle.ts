/** MsgAcknowledgeLease, MsgRejectLease, MsgCancelLease and MsgCloseLease (all atomic batches). */
import {
  type Lease,
  LeaseState,
  MsgAcknowledgeLease,
  MsgAcknowledgeLeaseResponse,
  MsgCancelLease,
  MsgCancelLeaseResponse,
  MsgCloseLease,
  MsgCloseLeaseResponse,
  MsgRejectLease,
  MsgRejectLeaseResponse,
} from "../../../chain/proto/index.ts";
import { addAll, type Coins, coinsToProto, formatCoins } from "../../coins.ts";
import { isPastPendingDeadline } from "../../economics/expiry.ts";
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
  tsNs,
} from "./ledger.ts";
import { getLease, getParams, putLease } from "./store.ts";
import { checkAddress, checkLeaseUuids, checkReason, sanitize } from "./validate.ts";

export const CANCEL_REASON = "cancelled by tenant";
export const CREDIT_EXHAUSTED = "credit exhausted";

function loadAll(ctx: ExecContext, uuids: readonly string[]): Lease[] {
  return uuids.map((id) => {
    const lease = getLease(ctx, id);
    if (lease === undefined) throw billingErrors.leaseNotFound.wrap(id);
    return lease;
  });
}

function requireState(leases: Lease[], state: number, err: typeof billingErrors.leaseNotPending): void {
  for (const l of leases) if (l.state !== state) throw err.wrap(l.uuid);
}

function singleProvider(leases: Lease[]): string {
  const first = leases[0]!.providerUuid;
  for (const l of leases) if (l.providerUuid !== first) throw billingErrors.mixedProviders.wrap(l.uuid);
  return first;
}

export function lifecycleMessages(deps: BillingDeps): MsgHandler<unknown>[] {
  const { prefix } = deps;

  /** Shared gate of provider-side batch Msgs: PENDING leases of one provider, sender allowed. */
  function providerPendingBatch(ctx: ExecContext, sender: string, uuids: string[], needAccounts: boolean) {
    const leases = loadAll(ctx, uuids);
    requireState(leases, LeaseState.LEASE_STATE_PENDING, billingErrors.leaseNotPending);
    const providerUuid = singleProvider(leases);
    const cache = new AccountCache(ctx);
    if (needAccounts) for (const l of leases) cache.mustGet(l.tenant);
    if (!isProviderOrAuthority(ctx, deps, providerUuid, sender).allowed)
      throw billingErrors.unauthorized.wrap(`${sender} is neither the provider nor the authority`);
    return { leases, providerUuid, cache };
  }

  const acknowledge = defineMsg({
    codec: MsgAcknowledgeLease,
    response: MsgAcknowledgeLeaseResponse,
    signer: (m) => m.sender,
    validateBasic(m) {
      checkAddress(billingErrors.unauthorized, "sender", m.sender, prefix);
      checkLeaseUuids(m.leaseUuids);
    },
    execute(ctx, m) {
      const { leases, providerUuid, cache } = providerPendingBatch(ctx, m.sender, m.leaseUuids, true);
      const params = getParams(ctx);
      const now = nowNs(ctx);
      const extra = new Map<string, bigint>();
      for (const l of leases) {
        if (isPastPendingDeadline(tsNs(l.createdAt), now, params.pendingTimeout))
          throw billingErrors.ackDeadlineExceeded.wrap(l.uuid);
        extra.set(l.tenant, (extra.get(l.tenant) ?? 0n) + 1n);
      }
      for (const [tenant, n] of extra)
        if (cache.mustGet(tenant).activeLeaseCount + n > params.maxLeasesPerTenant)
          throw billingErrors.ackActiveCapExceeded.wrap(tenant);
      const at = nowTs(ctx);
      const by = m.sender.toLowerCase();
      const events = new EventBuffer();
      for (const l of leases) {
        const account = cache.mustGet(l.tenant);
        account.pendingLeaseCount -= 1n;
        account.activeLeaseCount += 1n;
        cache.touch(account);
        putLease(
          ctx,
          { ...l, state: LeaseState.LEASE_STATE_ACTIVE, acknowledgedAt: at, lastSettledAt: at },
          l.state,
        );
        events.push("lease_acknowledged", {
          lease_uuid: l.uuid,
          tenant: l.tenant,
          provider_uuid: providerUuid,
          acknowledged_by: by,
        });
      }
      cache.flush();
      if (leases.length > 1)
        events.push("batch_acknowledged", {
          lease_count: String(leases.length),
          provider_uuid: providerUuid,
          acknowledged_by: by,
        });
      events.flush(ctx);
      return { acknowledgedAt: at, acknowledgedCount: BigInt(leases.length) };
    },
  });

  const reject = defineMsg({
    codec: MsgRejectLease,
    response: MsgRejectLeaseResponse,
    signer: (m) => m.sender,
    validateBasic(m) {
      checkAddress(billingErrors.unauthorized, "sender", m.sender, prefix);
      checkLeaseUuids(m.leaseUuids);
      checkReason(m.reason, billingErrors.invalidRejectionReason);
    },
    execute(ctx, m) {
      const { leases, providerUuid, cache } = providerPendingBatch(ctx, m.sender, m.leaseUuids, true);
      const at = nowTs(ctx);
      const by = m.sender.toLowerCase();
      const events = new EventBuffer();
      for (const l of leases) {
        const account = cache.mustGet(l.tenant);
        terminate(ctx, l, account, LeaseState.LEASE_STATE_REJECTED, (x) => {
          x.rejectedAt = at;
          x.rejectionReason = m.reason;
        });
        cache.touch(account);
        events.push("lease_rejected", {
          lease_uuid: l.uuid,
          tenant: l.tenant,
          provider_uuid: providerUuid,
          rejected_by: by,
          rejection_reason: sanitize(m.reason),
        });
      }
      cache.flush();
      if (leases.length > 1)
        events.push("batch_rejected", {
          lease_count: String(leases.length),
          provider_uuid: providerUuid,
          rejected_by: by,
        });
      events.flush(ctx);
      return { rejectedAt: at, rejectedCount: BigInt(leases.length) };
    },
  });

  const cancel = defineMsg({
    codec: MsgCancelLease,
    response: MsgCancelLeaseResponse,
    signer: (m) => m.tenant,
    validateBasic(m) {
      checkAddress(billingErrors.invalidLease, "tenant", m.tenant, prefix);
      checkLeaseUuids(m.leaseUuids);
    },
    execute(ctx, m) {
      const tenant = m.tenant.toLowerCase();
      const leases = loadAll(ctx, m.leaseUuids);
      for (const l of leases) {
        if (l.tenant !== tenant) throw billingErrors.unauthorized.wrap(`${l.uuid} is not owned by ${tenant}`);
        if (l.state !== LeaseState.LEASE_STATE_PENDING) throw billingErrors.leaseNotPending.wrap(l.uuid);
      }
      const cache = new AccountCache(ctx);
      const at = nowTs(ctx);
      const events = new EventBuffer();
      for (const l of leases) {
        const account = cache.mustGet(l.tenant);
        terminate(ctx, l, account, LeaseState.LEASE_STATE_REJECTED, (x) => {
          x.rejectedAt = at;
          x.rejectionReason = CANCEL_REASON;
        });
        cache.touch(account);
        events.push("lease_cancelled", {
          lease_uuid: l.uuid,
          tenant,
          provider_uuid: l.providerUuid,
          cancelled_by: tenant,
        });
      }
      cache.flush();
      if (leases.length > 1)
        events.push("batch_cancelled", { lease_count: String(leases.length), tenant, cancelled_by: tenant });
      events.flush(ctx);
      return { cancelledAt: at, cancelledCount: BigInt(leases.length) };
    },
  });

  const close = defineMsg({
    codec: MsgCloseLease,
    response: MsgCloseLeaseResponse,
    signer: (m) => m.sender,
    validateBasic(m) {
      checkAddress(billingErrors.unauthorized, "sender", m.sender, prefix);
      checkLeaseUuids(m.leaseUuids);
      checkReason(m.reason, billingErrors.invalidClosureReason);
    },
    execute(ctx, m) {
      const sender = m.sender.toLowerCase();
      const leases = loadAll(ctx, m.leaseUuids);
      requireState(leases, LeaseState.LEASE_STATE_ACTIVE, billingErrors.leaseNotActive);
      let batchRole: string | undefined;
      for (const l of leases) {
        let role: string;
        if (sender === deps.authority) role = "authority";
        else if (sender === l.tenant) role = "tenant";
        else if (isProviderOrAuthority(ctx, deps, l.providerUuid, sender).allowed) role = "provider";
        else throw billingErrors.unauthorized.wrap(`${sender} may not close ${l.uuid}`);
        if (batchRole !== undefined && batchRole !== role)
          throw billingErrors.unauthorized.wrap("every lease of a batch must be closed in the same role");
        batchRole = role;
      }
      const cache = new AccountCache(ctx);
      const at = nowTs(ctx);
      const now = nowNs(ctx);
      const total: Coins = new Map();
      const events = new EventBuffer();
      for (const l of leases) {
        const account = cache.mustGet(l.tenant);
        const s = settleActive(ctx, deps, l, account, now);
        const exhausted = s.shortfall;
        const reason = exhausted ? CREDIT_EXHAUSTED : m.reason;
        terminate(ctx, l, account, LeaseState.LEASE_STATE_CLOSED, (x) => {
          x.closedAt = at;
          x.lastSettledAt = at;
          x.closureReason = reason;
        });
        cache.touch(account);
        addAll(total, s.transfer);
        events.push("lease_closed", {
          lease_uuid: l.uuid,
          tenant: l.tenant,
          provider_uuid: l.providerUuid,
          settled_amounts: formatCoins(s.transfer),
          closed_by: exhausted ? "credit_exhaustion" : batchRole!,
          duration_seconds: String(s.seconds),
          active_lease_count: String(account.activeLeaseCount),
          closure_reason: reason === "" ? undefined : sanitize(reason),
        });
      }
      cache.flush();
      if (leases.length > 1)
        events.push("batch_closed", {
          lease_count: String(leases.length),
          closed_by: batchRole!,
          settled_amounts: formatCoins(total),
        });
      events.flush(ctx);
      return { closedAt: at, closedCount: BigInt(leases.length), totalSettledAmounts: coinsToProto(total) };
    },
  });

  return [acknowledge, reject, cancel, close];
}
