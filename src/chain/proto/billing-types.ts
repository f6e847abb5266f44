/**
 * liftedinit.billing.v1 state types (newer line: Lease.reservation = 16, CreditAccount 6/7).
 * The matching .proto text lives in ./liftedinit/billing/v1/types.proto.
 */
import { f, message } from "./codec.ts";
import { Coin, Timestamp } from "./cosmos.ts";

const P = "/liftedinit.billing.v1.";
type Of<C extends { decode: (...a: never[]) => unknown }> = ReturnType<C["decode"]>;

export const LeaseState = {
  LEASE_STATE_UNSPECIFIED: 0,
  LEASE_STATE_PENDING: 1,
  LEASE_STATE_ACTIVE: 2,
  LEASE_STATE_CLOSED: 3,
  LEASE_STATE_REJECTED: 4,
  LEASE_STATE_EXPIRED: 5,
} as const;
export type LeaseState = (typeof LeaseState)[keyof typeof LeaseState];

export const BillingParams = message(`${P}Params`, {
  maxLeasesPerTenant: f.uint64(1),
  allowedList: f.repeatedString(2),
  maxItemsPerLease: f.uint64(3),
  minLeaseDuration: f.uint64(4),
  maxPendingLeasesPerTenant: f.uint64(5),
  pendingTimeout: f.uint64(6),
  reservedDomainSuffixes: f.repeatedString(7),
});
export type BillingParams = Of<typeof BillingParams>;

export const LeaseItem = message(`${P}LeaseItem`, {
  skuUuid: f.string(1),
  quantity: f.uint64(2),
  lockedPrice: f.message(3, Coin),
  serviceName: f.string(4),
  customDomain: f.string(5),
});
export type LeaseItem = Of<typeof LeaseItem>;

export const LeaseItemInput = message(`${P}LeaseItemInput`, {
  skuUuid: f.string(1),
  quantity: f.uint64(2),
  serviceName: f.string(3),
});
export type LeaseItemInput = Of<typeof LeaseItemInput>;

export const LeaseReservation = message(`${P}LeaseReservation`, {
  remainingAmounts: f.repeatedMessage(1, Coin),
});
export type LeaseReservation = Of<typeof LeaseReservation>;

export const Lease = message(`${P}Lease`, {
  uuid: f.string(1),
  tenant: f.string(2),
  providerUuid: f.string(3),
  items: f.repeatedMessage(4, LeaseItem),
  state: f.enum(5),
  createdAt: f.message(6, Timestamp),
  closedAt: f.message(7, Timestamp),
  lastSettledAt: f.message(8, Timestamp),
  acknowledgedAt: f.message(9, Timestamp),
  rejectedAt: f.message(10, Timestamp),
  rejectionReason: f.string(11),
  expiredAt: f.message(12, Timestamp),
  closureReason: f.string(13),
  metaHash: f.bytes(14),
  minLeaseDurationAtCreation: f.uint64(15),
  reservation: f.message(16, LeaseReservation),
});
export type Lease = Of<typeof Lease>;

export const CustomDomainTarget = message(`${P}CustomDomainTarget`, {
  leaseUuid: f.string(1),
  serviceName: f.string(2),
});
export type CustomDomainTarget = Of<typeof CustomDomainTarget>;

export const CreditAccount = message(`${P}CreditAccount`, {
  tenant: f.string(1),
  creditAddress: f.string(2),
  activeLeaseCount: f.uint64(3),
  pendingLeaseCount: f.uint64(4),
  reservedAmounts: f.repeatedMessage(5, Coin),
  unattributedReservedAmounts: f.repeatedMessage(6, Coin),
  unattributedLeaseCount: f.uint64(7),
});
export type CreditAccount = Of<typeof CreditAccount>;

export const BillingGenesisState = message(`${P}GenesisState`, {
  params: f.message(1, BillingParams),
  leases: f.repeatedMessage(2, Lease),
  creditAccounts: f.repeatedMessage(3, CreditAccount),
  leaseSequence: f.uint64(4),
});
export type BillingGenesisState = Of<typeof BillingGenesisState>;
