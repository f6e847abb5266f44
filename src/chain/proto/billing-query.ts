/**
 * liftedinit.billing.v1 queries (path /liftedinit.billing.v1.Query/<Method>), newer line:
 * ProviderWithdrawable uses pagination (request 3, response 4) and reports failed leases (5);
 * CreditAccount is paginated (request 2, response 4).
 */

import { BillingParams, CreditAccount, Lease } from "./billing-types.ts";
import { f, message } from "./codec.ts";
import { Coin, PageRequest, PageResponse } from "./cosmos.ts";

const P = "/liftedinit.billing.v1.";

export const BillingQueryParamsRequest = message(`${P}QueryParamsRequest`, {});
export const BillingQueryParamsResponse = message(`${P}QueryParamsResponse`, {
  params: f.message(1, BillingParams),
});
export const QueryLeaseRequest = message(`${P}QueryLeaseRequest`, { leaseUuid: f.string(1) });
export const QueryLeaseResponse = message(`${P}QueryLeaseResponse`, { lease: f.message(1, Lease) });
export const QueryLeasesRequest = message(`${P}QueryLeasesRequest`, {
  pagination: f.message(1, PageRequest),
  stateFilter: f.enum(2),
});
export const QueryLeasesResponse = message(`${P}QueryLeasesResponse`, {
  leases: f.repeatedMessage(1, Lease),
  pagination: f.message(2, PageResponse),
});
export const QueryLeasesByTenantRequest = message(`${P}QueryLeasesByTenantRequest`, {
  tenant: f.string(1),
  pagination: f.message(2, PageRequest),
  stateFilter: f.enum(3),
});
export const QueryLeasesByTenantResponse = message(`${P}QueryLeasesByTenantResponse`, {
  leases: f.repeatedMessage(1, Lease),
  pagination: f.message(2, PageResponse),
});
export const QueryLeasesByProviderRequest = message(`${P}QueryLeasesByProviderRequest`, {
  providerUuid: f.string(1),
  pagination: f.message(2, PageRequest),
  stateFilter: f.enum(3),
});
export const QueryLeasesByProviderResponse = message(`${P}QueryLeasesByProviderResponse`, {
  leases: f.repeatedMessage(1, Lease),
  pagination: f.message(2, PageResponse),
});
export const QueryLeasesBySKURequest = message(`${P}QueryLeasesBySKURequest`, {
  skuUuid: f.string(1),
  pagination: f.message(2, PageRequest),
  stateFilter: f.enum(3),
});
export const QueryLeasesBySKUResponse = message(`${P}QueryLeasesBySKUResponse`, {
  leases: f.repeatedMessage(1, Lease),
  pagination: f.message(2, PageResponse),
});
export const QueryCreditAccountRequest = message(`${P}QueryCreditAccountRequest`, {
  tenant: f.string(1),
  pagination: f.message(2, PageRequest),
});
export const QueryCreditAccountResponse = message(`${P}QueryCreditAccountResponse`, {
  creditAccount: f.message(1, CreditAccount),
  balances: f.repeatedMessage(2, Coin),
  availableBalances: f.repeatedMessage(3, Coin),
  pagination: f.message(4, PageResponse),
});
export const QueryCreditAddressRequest = message(`${P}QueryCreditAddressRequest`, { tenant: f.string(1) });
export const QueryCreditAddressResponse = message(`${P}QueryCreditAddressResponse`, {
  creditAddress: f.string(1),
});
export const QueryWithdrawableAmountRequest = message(`${P}QueryWithdrawableAmountRequest`, {
  leaseUuid: f.string(1),
});
export const QueryWithdrawableAmountResponse = message(`${P}QueryWithdrawableAmountResponse`, {
  amounts: f.repeatedMessage(1, Coin),
});
export const QueryProviderWithdrawableRequest = message(`${P}QueryProviderWithdrawableRequest`, {
  providerUuid: f.string(1),
  pagination: f.message(3, PageRequest),
});
export const QueryProviderWithdrawableResponse = message(`${P}QueryProviderWithdrawableResponse`, {
  amounts: f.repeatedMessage(1, Coin),
  leaseCount: f.uint64(2),
  pagination: f.message(4, PageResponse),
  failedLeaseUuids: f.repeatedString(5),
});
export const QueryCreditAccountsRequest = message(`${P}QueryCreditAccountsRequest`, {
  pagination: f.message(1, PageRequest),
});
export const QueryCreditAccountsResponse = message(`${P}QueryCreditAccountsResponse`, {
  creditAccounts: f.repeatedMessage(1, CreditAccount),
  pagination: f.message(2, PageResponse),
});
export const QueryCreditEstimateRequest = message(`${P}QueryCreditEstimateRequest`, { tenant: f.string(1) });
export const QueryCreditEstimateResponse = message(`${P}QueryCreditEstimateResponse`, {
  currentBalance: f.repeatedMessage(1, Coin),
  totalRatePerSecond: f.repeatedMessage(2, Coin),
  estimatedDurationSeconds: f.uint64(3),
  activeLeaseCount: f.uint64(4),
});
export const QueryLeaseByCustomDomainRequest = message(`${P}QueryLeaseByCustomDomainRequest`, {
  customDomain: f.string(1),
});
export const QueryLeaseByCustomDomainResponse = message(`${P}QueryLeaseByCustomDomainResponse`, {
  lease: f.message(1, Lease),
  serviceName: f.string(2),
});
