/** MsgFundCredit, MsgCreateLease and MsgCreateLeaseForTenant. */
import {
  type LeaseItem,
  type LeaseItemInput,
  LeaseState,
  MsgCreateLease,
  MsgCreateLeaseForTenant,
  MsgCreateLeaseForTenantResponse,
  MsgCreateLeaseResponse,
  MsgFundCredit,
  MsgFundCreditResponse,
} from "../../../chain/proto/index.ts";
import { coinsToProto, formatCoins, isValidDenom } from "../../coins.ts";
import { insufficientDenom, leaseRate, reservationFor } from "../../economics/settlement.ts";
import { UUID_NAMESPACE } from "../../economics/uuidv7.ts";
import { isChainError } from "../../errors.ts";
import type { ExecContext, MsgHandler } from "../../module.ts";
import { allocateUuid } from "../sku/keeper.ts";
import { SECONDS_PER_UNIT } from "../sku/validate.ts";
import { billingErrors } from "./errors.ts";
import { defineMsg, ev } from "./handler.ts";
import { AccountCache, type BillingDeps, balanceOf, newAccount, nowTs, reserve } from "./ledger.ts";
import { BILLING, getParams, putLease } from "./store.ts";
import { checkAddress, checkItems } from "./validate.ts";

const MAX_RESERVED_DENOMS = 1000;

export function createMessages(deps: BillingDeps): MsgHandler<unknown>[] {
  const { bank, sku, prefix } = deps;

  const fundCredit = defineMsg({
    codec: MsgFundCredit,
    response: MsgFundCreditResponse,
    signer: (m) => m.sender,
    validateBasic(m) {
      checkAddress(billingErrors.invalidCreditOperation, "sender", m.sender, prefix);
      checkAddress(billingErrors.invalidCreditOperation, "tenant", m.tenant, prefix);
      const a = m.amount;
      if (a === undefined || !isValidDenom(a.denom) || !/^[0-9]+$/.test(a.amount) || BigInt(a.amount) === 0n)
        throw billingErrors.invalidCreditOperation.wrap("amount must be a valid non-zero coin");
    },
    execute(ctx, m) {
      const tenant = m.tenant.toLowerCase();
      const cache = new AccountCache(ctx);
      const account = cache.get(tenant) ?? newAccount(tenant);
      try {
        bank.sendCoins(ctx, m.sender, account.creditAddress, [m.amount!]);
      } catch (err) {
        if (isChainError(err)) throw billingErrors.invalidCreditOperation.wrap(err.log);
        throw err;
      }
      if (cache.get(tenant) === undefined) cache.touch(account);
      cache.flush();
      const newBalance = {
        denom: m.amount!.denom,
        amount: bank.getBalance(ctx, account.creditAddress, m.amount!.denom).toString(),
      };
      ctx.emit(
        ev("credit_funded", {
          tenant,
          credit_address: account.creditAddress,
          sender: m.sender.toLowerCase(),
          amount: `${m.amount!.amount}${m.amount!.denom}`,
          new_balance: `${newBalance.amount}${newBalance.denom}`,
        }),
      );
      return { creditAddress: account.creditAddress, newBalance };
    },
  });

  /** The keeper half of lease creation, shared by both create Msgs. */
  function createLease(
    ctx: ExecContext,
    tenantRaw: string,
    inputs: LeaseItemInput[],
    metaHash: Uint8Array,
    sender: string,
    createdBy: string,
  ): string {
    const tenant = tenantRaw.toLowerCase();
    const params = getParams(ctx);
    if (BigInt(inputs.length) > params.maxItemsPerLease)
      throw billingErrors.tooManyItems.wrap(`at most ${params.maxItemsPerLease} items`);
    const cache = new AccountCache(ctx);
    const account = cache.mustGet(tenant);
    if (account.activeLeaseCount >= params.maxLeasesPerTenant)
      throw billingErrors.maxLeases.wrap(`${account.activeLeaseCount} active leases`);
    if (account.pendingLeaseCount >= params.maxPendingLeasesPerTenant)
      throw billingErrors.maxPendingLeases.wrap(`${account.pendingLeaseCount} pending leases`);
    let providerUuid = "";
    const items: LeaseItem[] = [];
    for (const input of inputs) {
      const s = sku.getSku(ctx, input.skuUuid);
      if (s === undefined) throw billingErrors.skuNotFound.wrap(input.skuUuid);
      if (!s.active) throw billingErrors.skuNotActive.wrap(input.skuUuid);
      if (providerUuid === "") providerUuid = s.providerUuid;
      else if (s.providerUuid !== providerUuid) throw billingErrors.mixedProviders.wrap(input.skuUuid);
      const perSecond = BigInt(s.basePrice!.amount) / SECONDS_PER_UNIT[s.unit]!;
      items.push({
        skuUuid: s.uuid,
        quantity: input.quantity,
        lockedPrice: { denom: s.basePrice!.denom, amount: perSecond.toString() },
        serviceName: input.serviceName,
        customDomain: "",
      });
    }
    const provider = sku.getProvider(ctx, providerUuid);
    if (provider === undefined) throw billingErrors.providerNotFound.wrap(providerUuid);
    if (!provider.active) throw billingErrors.providerNotActive.wrap(providerUuid);
    const rate = leaseRate(items);
    const tranche = reservationFor(rate, params.minLeaseDuration);
    const short = insufficientDenom(
      balanceOf(ctx, bank, account.creditAddress, tranche.keys()),
      new Map(account.reservedAmounts.map((c) => [c.denom, BigInt(c.amount)])),
      tranche,
    );
    if (short !== undefined)
      throw billingErrors.insufficientCredit.wrap(
        `reservation of ${formatCoins(tranche)} exceeds available ${short}`,
      );
    reserve(account, tranche);
    if (account.reservedAmounts.length > MAX_RESERVED_DENOMS)
      throw billingErrors.reservationDenomLimit.error();
    account.pendingLeaseCount += 1n;
    cache.touch(account);
    const uuid = allocateUuid(ctx, ctx.store(BILLING), UUID_NAMESPACE.lease);
    const now = nowTs(ctx);
    putLease(ctx, {
      uuid,
      tenant,
      providerUuid,
      items,
      state: LeaseState.LEASE_STATE_PENDING,
      createdAt: now,
      closedAt: undefined,
      lastSettledAt: now,
      acknowledgedAt: undefined,
      rejectedAt: undefined,
      rejectionReason: "",
      expiredAt: undefined,
      closureReason: "",
      metaHash,
      minLeaseDurationAtCreation: params.minLeaseDuration,
      reservation: { remainingAmounts: coinsToProto(tranche) },
    });
    cache.flush();
    ctx.emit(
      ev("lease_created", {
        lease_uuid: uuid,
        tenant,
        provider_uuid: providerUuid,
        item_count: String(items.length),
        total_rate_per_second: formatCoins(rate),
        pending_lease_count: String(account.pendingLeaseCount),
        created_by: createdBy,
        sender: sender.toLowerCase(),
        meta_hash: metaHash.length > 0 ? Buffer.from(metaHash).toString("hex") : undefined,
      }),
    );
    return uuid;
  }

  const create = defineMsg({
    codec: MsgCreateLease,
    response: MsgCreateLeaseResponse,
    signer: (m) => m.tenant,
    validateBasic(m) {
      checkAddress(billingErrors.invalidLease, "tenant", m.tenant, prefix);
      checkItems(m.items, m.metaHash);
    },
    execute: (ctx, m) => ({ leaseUuid: createLease(ctx, m.tenant, m.items, m.metaHash, m.tenant, "tenant") }),
  });

  const createForTenant = defineMsg({
    codec: MsgCreateLeaseForTenant,
    response: MsgCreateLeaseForTenantResponse,
    signer: (m) => m.authority,
    validateBasic(m) {
      checkAddress(billingErrors.unauthorized, "authority", m.authority, prefix);
      checkAddress(billingErrors.invalidLease, "tenant", m.tenant, prefix);
      checkItems(m.items, m.metaHash);
    },
    execute(ctx, m) {
      const sender = m.authority.toLowerCase();
      let role = "authority";
      if (sender !== deps.authority) {
        if (!getParams(ctx).allowedList.some((a) => a.toLowerCase() === sender))
          throw billingErrors.unauthorized.wrap(`${sender} may not create leases for tenants`);
        role = "allowed";
      }
      return { leaseUuid: createLease(ctx, m.tenant, m.items, m.metaHash, sender, role) };
    },
  });

  return [fundCredit, create, createForTenant];
}
