/**
 * liftedinit.billing.v1 Msgs and their responses (newer line: MsgWithdraw.key = 5,
 * MsgWithdrawResponse.next_key = 5 and failed_lease_uuids = 6).
 */

import { BillingParams, LeaseItemInput } from "./billing-types.ts";
import { f, message } from "./codec.ts";
import { Coin, Timestamp } from "./cosmos.ts";

const P = "/liftedinit.billing.v1.";
type Of<C extends { decode: (...a: never[]) => unknown }> = ReturnType<C["decode"]>;

export const MsgFundCredit = message(`${P}MsgFundCredit`, {
  sender: f.string(1),
  tenant: f.string(2),
  amount: f.message(3, Coin, { required: true }),
});
export type MsgFundCredit = Of<typeof MsgFundCredit>;
export const MsgFundCreditResponse = message(`${P}MsgFundCreditResponse`, {
  creditAddress: f.string(1),
  newBalance: f.message(2, Coin),
});

export const MsgCreateLease = message(`${P}MsgCreateLease`, {
  tenant: f.string(1),
  items: f.repeatedMessage(2, LeaseItemInput),
  metaHash: f.bytes(3),
});
export type MsgCreateLease = Of<typeof MsgCreateLease>;
export const MsgCreateLeaseResponse = message(`${P}MsgCreateLeaseResponse`, { leaseUuid: f.string(1) });

export const MsgCreateLeaseForTenant = message(`${P}MsgCreateLeaseForTenant`, {
  authority: f.string(1),
  tenant: f.string(2),
  items: f.repeatedMessage(3, LeaseItemInput),
  metaHash: f.bytes(4),
});
export type MsgCreateLeaseForTenant = Of<typeof MsgCreateLeaseForTenant>;
export const MsgCreateLeaseForTenantResponse = message(`${P}MsgCreateLeaseForTenantResponse`, {
  leaseUuid: f.string(1),
});

export const MsgAcknowledgeLease = message(`${P}MsgAcknowledgeLease`, {
  sender: f.string(1),
  leaseUuids: f.repeatedString(2),
});
export type MsgAcknowledgeLease = Of<typeof MsgAcknowledgeLease>;
export const MsgAcknowledgeLeaseResponse = message(`${P}MsgAcknowledgeLeaseResponse`, {
  acknowledgedAt: f.message(1, Timestamp),
  acknowledgedCount: f.uint64(2),
});

export const MsgRejectLease = message(`${P}MsgRejectLease`, {
  sender: f.string(1),
  leaseUuids: f.repeatedString(2),
  reason: f.string(3),
});
export type MsgRejectLease = Of<typeof MsgRejectLease>;
export const MsgRejectLeaseResponse = message(`${P}MsgRejectLeaseResponse`, {
  rejectedAt: f.message(1, Timestamp),
  rejectedCount: f.uint64(2),
});

export const MsgCancelLease = message(`${P}MsgCancelLease`, {
  tenant: f.string(1),
  leaseUuids: f.repeatedString(2),
});
export type MsgCancelLease = Of<typeof MsgCancelLease>;
export const MsgCancelLeaseResponse = message(`${P}MsgCancelLeaseResponse`, {
  cancelledAt: f.message(1, Timestamp),
  cancelledCount: f.uint64(2),
});

export const MsgCloseLease = message(`${P}MsgCloseLease`, {
  sender: f.string(1),
  leaseUuids: f.repeatedString(2),
  reason: f.string(3),
});
export type MsgCloseLease = Of<typeof MsgCloseLease>;
export const MsgCloseLeaseResponse = message(`${P}MsgCloseLeaseResponse`, {
  closedAt: f.message(1, Timestamp),
  closedCount: f.uint64(2),
  totalSettledAmounts: f.repeatedMessage(3, Coin),
});

export const MsgWithdraw = message(`${P}MsgWithdraw`, {
  sender: f.string(1),
  leaseUuids: f.repeatedString(2),
  providerUuid: f.string(3),
  limit: f.uint64(4),
  key: f.bytes(5),
});
export type MsgWithdraw = Of<typeof MsgWithdraw>;
export const MsgWithdrawResponse = message(`${P}MsgWithdrawResponse`, {
  totalAmounts: f.repeatedMessage(1, Coin),
  payoutAddress: f.string(2),
  withdrawalCount: f.uint64(3),
  hasMore: f.bool(4),
  nextKey: f.bytes(5),
  failedLeaseUuids: f.repeatedString(6),
});
export type MsgWithdrawResponse = Of<typeof MsgWithdrawResponse>;

export const BillingMsgUpdateParams = message(`${P}MsgUpdateParams`, {
  authority: f.string(1),
  params: f.message(2, BillingParams, { required: true }),
});
export type BillingMsgUpdateParams = Of<typeof BillingMsgUpdateParams>;
export const BillingMsgUpdateParamsResponse = message(`${P}MsgUpdateParamsResponse`, {});

export const MsgSetItemCustomDomain = message(`${P}MsgSetItemCustomDomain`, {
  sender: f.string(1),
  leaseUuid: f.string(2),
  serviceName: f.string(3),
  customDomain: f.string(4),
});
export type MsgSetItemCustomDomain = Of<typeof MsgSetItemCustomDomain>;
export const MsgSetItemCustomDomainResponse = message(`${P}MsgSetItemCustomDomainResponse`, {});

/** Every billing Msg, for registries and amino converters. */
export const billingMsgs = [
  MsgFundCredit,
  MsgCreateLease,
  MsgCreateLeaseForTenant,
  MsgAcknowledgeLease,
  MsgRejectLease,
  MsgCancelLease,
  MsgCloseLease,
  MsgWithdraw,
  BillingMsgUpdateParams,
  MsgSetItemCustomDomain,
] as const;

export const billingMsgResponses = [
  MsgFundCreditResponse,
  MsgCreateLeaseResponse,
  MsgCreateLeaseForTenantResponse,
  MsgAcknowledgeLeaseResponse,
  MsgRejectLeaseResponse,
  MsgCancelLeaseResponse,
  MsgCloseLeaseResponse,
  MsgWithdrawResponse,
  BillingMsgUpdateParamsResponse,
  MsgSetItemCustomDomainResponse,
] as const;
